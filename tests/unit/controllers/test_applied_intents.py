"""`AppliedIntents`: when a server-side apply of the leader workload may be skipped."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from leaderworkerset.controllers.memos import AppliedIntents
from leaderworkerset.runtime.objects import ObjectKey
from tests.support.builders import StatefulSetBuilder

KEY = ObjectKey("ns", "lws")
REPLICAS = "leaderworkerset.sigs.k8s.io/replicas"


def body(partition: int = 0) -> dict[str, Any]:
    return (
        StatefulSetBuilder("lws", "ns")
        .label("leaderworkerset.sigs.k8s.io/name", "lws")
        .annotation(REPLICAS, "2")
        .owner({"kind": "LeaderWorkerSet", "name": "lws", "uid": "lws-uid"})
        .replicas(2)
        .partition(partition)
        .obj()
    )


def live(**meta: Any) -> dict[str, Any]:
    """The object as an apply of `body()` left it (plus server fields), with `meta` overriding."""
    obj = copy.deepcopy(body())
    obj["metadata"] |= {"uid": "sts-uid", "generation": 3, "resourceVersion": "7"} | meta
    obj["status"] = {"readyReplicas": 1}
    return obj


@pytest.fixture
def intents() -> AppliedIntents:
    memo = AppliedIntents()
    memo.remember(KEY, body(), live())
    return memo


def test_the_same_body_onto_the_object_it_left_is_skipped(intents: AppliedIntents) -> None:
    assert intents.unchanged(KEY, body(), live())
    # A status write (the StatefulSet controller's) moves the resourceVersion, not the generation.
    assert intents.unchanged(KEY, body(), live(resourceVersion="9") | {"status": {"readyReplicas": 2}})


@pytest.mark.parametrize(
    ("case", "new_body", "observed"),
    [
        ("a new partition", body(partition=1), live()),
        ("another writer's spec edit", body(), live(generation=4)),
        ("a recreated object", body(), live(uid="other-uid")),
        ("a label removed by another writer", body(), live(labels={})),
        ("an annotation changed by another writer", body(), live(annotations={REPLICAS: "3"})),
        ("an owner reference removed", body(), live(ownerReferences=[])),
        ("the object is being deleted", body(), live(deletionTimestamp="2026-12-01T00:00:00Z")),
        ("the object is not known", body(), None),
    ],
)
def test_anything_that_differs_is_applied(
    intents: AppliedIntents, case: str, new_body: dict[str, Any], observed: dict[str, Any] | None
) -> None:
    assert not intents.unchanged(KEY, new_body, observed), case


def test_nothing_is_skipped_before_the_first_apply_or_after_forgetting(intents: AppliedIntents) -> None:
    assert not AppliedIntents().unchanged(KEY, body(), live())
    intents.forget(KEY)
    assert not intents.unchanged(KEY, body(), live())


def test_extra_labels_of_other_writers_do_not_force_an_apply(intents: AppliedIntents) -> None:
    extra = live(labels={"leaderworkerset.sigs.k8s.io/name": "lws", "team": "serving"})
    assert intents.unchanged(KEY, body(), extra)
