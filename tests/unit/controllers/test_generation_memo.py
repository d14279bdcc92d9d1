"""GenerationMemo: a spec-derived value computed once per (uid, generation) of each object."""

from __future__ import annotations

from typing import Any

from leaderworkerset.controllers.generationmemo import GenerationMemo
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.rollout.revision import revision_patch
from leaderworkerset.runtime.objects import ObjectKey
from tests.support.builders import DisaggregatedSetBuilder, LeaderWorkerSetBuilder


def _stored(obj: dict[str, Any], uid: str, generation: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "uid": uid, "generation": generation}}


def test_a_set_is_rendered_once_per_generation_and_again_when_its_spec_moves() -> None:
    memo = GenerationMemo(revision_patch)
    lws = _stored(LeaderWorkerSetBuilder("ns", "a").obj(), "uid-a", 1)
    first = memo.get(lws)
    for _ in range(5):  # every event of the same spec: one rendering
        assert memo.get({**lws, "status": {"readyReplicas": 3}}) == first
    assert memo.computed == 1
    changed = _stored(LeaderWorkerSetBuilder("ns", "a").size(4).obj(), "uid-a", 2)
    assert memo.get(changed) == revision_patch(changed) != first
    assert memo.computed == 2
    assert len(memo) == 1  # one entry per object, replaced


def test_a_set_recreated_under_the_same_name_is_not_served_its_predecessors_value() -> None:
    memo = GenerationMemo(revision_patch)
    memo.get(_stored(LeaderWorkerSetBuilder("ns", "a").obj(), "uid-old", 1))
    recreated = _stored(LeaderWorkerSetBuilder("ns", "a").size(3).obj(), "uid-new", 1)
    assert memo.get(recreated) == revision_patch(recreated)
    assert memo.computed == 2


def test_an_object_never_stored_is_computed_every_time_and_a_deleted_one_is_forgotten() -> None:
    def revision(ds: Any) -> str:
        return disaggregated_revision(ds["spec"]["roles"])

    memo = GenerationMemo(revision)
    draft = DisaggregatedSetBuilder("ns").role("prefill", 1).obj()  # no uid, no generation
    memo.get(draft)
    memo.get(draft)
    assert (memo.computed, len(memo)) == (2, 0)
    stored = _stored(draft, "uid-ds", 1)
    assert memo.get(stored) == revision(draft)
    assert len(memo) == 1
    memo.forget(ObjectKey("ns", stored["metadata"]["name"]))
    assert len(memo) == 0
