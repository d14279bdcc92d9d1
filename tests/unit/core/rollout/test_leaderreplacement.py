"""Leader pod replacement where StatefulSets ignore maxUnavailable (MaxUnavailableStatefulSet off):
the detection, the note `lws plan`/`lws status` print, and the 1.37 StatefulSet controller's
Parallel update (updateStatefulSetAfterInvariantEstablished) as a table."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.core.rollout.leaderreplacement import (
    NOTE_PREFIX,
    REASON_AVAILABLE,
    REASON_UNAVAILABLE,
    emulation_note,
    ignores_max_unavailable,
    leader_replacements,
    may_replace,
)
from tests.support.builders import cached_lws, leader_pod, leader_sts

Obj = dict[str, Any]
NAME = "test-sample"
OLD, NEW = "sts-old", "sts-new"


def _lws(replicas: int = 6, max_unavailable: int | str = 3, max_surge: int | str = 0) -> Obj:
    return cached_lws().replicas(replicas).max_unavailable(max_unavailable).max_surge(max_surge).obj()


def _sts(replicas: int = 6, partition: int = 0, **kwargs: Any) -> Obj:
    kwargs.setdefault("update_revision", NEW)
    return leader_sts(NAME, replicas=replicas, partition=partition, **kwargs)


# Each pod as a letter: A available old, U unavailable old, T terminating old, n new available,
# u new unavailable, t new terminating, - missing.
def _pods(row: str) -> list[Obj]:
    pods = []
    for ordinal, state in enumerate(row):
        if state == "-":
            continue
        pods.append(
            leader_pod(
                NAME,
                ordinal,
                "rev",
                ready=state in "An",
                deleting=state in "Tt",
                sts_revision=OLD if state in "AUT" else NEW,
            )
        )
    return pods


def _deleted(lws: Obj, sts: Obj, row: str, **kwargs: Any) -> list[int]:
    return [d.ordinal for d in leader_replacements(lws, sts, _pods(row), **kwargs)]


@pytest.mark.parametrize(
    ("max_unavailable", "max_surge", "stored", "expected"),
    [
        pytest.param(3, 0, None, True, id="wanted-3-dropped"),
        pytest.param(1, 1, None, True, id="surge-counts-wanted-2-dropped"),
        pytest.param("50%", 0, None, True, id="percent-wanted-3-dropped"),
        pytest.param(1, 0, None, False, id="wanted-1-nothing-to-honour"),
        pytest.param("10%", 0, None, False, id="percent-rounds-down-to-1"),
        pytest.param(3, 0, 3, False, id="gate-on-field-stored"),
        pytest.param("1.5%", 0, None, False, id="unscalable-knob-reported-elsewhere"),
    ],
)
def test_detection(max_unavailable: int | str, max_surge: int, stored: int | None, expected: bool) -> None:
    lws = _lws(max_unavailable=max_unavailable, max_surge=max_surge)
    sts = _sts(max_unavailable=stored)
    assert ignores_max_unavailable(lws, sts) is expected
    note = emulation_note(lws, sts)
    assert (note is not None) is expected


def test_detection_needs_a_leader_statefulset() -> None:
    assert not ignores_max_unavailable(_lws(), None)


def test_note_wording() -> None:
    note = emulation_note(_lws(max_unavailable=2, max_surge=1), _sts())
    assert note == (
        NOTE_PREFIX + "the API server dropped maxUnavailable from the leader StatefulSet (feature gate "
        "MaxUnavailableStatefulSet is off), so the LeaderWorkerSet controller replaces up to 3 groups "
        "at a time itself"
    )


@pytest.mark.parametrize(
    ("row", "partition", "max_unavailable", "expected"),
    [
        # Phase 2 alone: the budget from the highest ordinal down to the partition.
        pytest.param("AAAAAA", 0, 3, [5, 4, 3], id="fresh-rollout-takes-three"),
        pytest.param("AAAAAA", 4, 3, [5, 4], id="partition-bounds-the-range"),
        pytest.param("AAAAAA", 6, 3, [], id="partition-at-replicas-nothing"),
        pytest.param("AAAAAA", 0, "50%", [5, 4, 3], id="percent-of-replicas"),
        # Unavailable and terminating pods use the budget up.
        pytest.param("AAAAnu", 0, 3, [3, 2], id="one-new-unready-two-more"),
        pytest.param("AAAuuu", 0, 3, [], id="budget-used-by-new-unready"),
        pytest.param("AAATnn", 0, 3, [2, 1], id="terminating-counts"),
        pytest.param("AAATTT", 0, 3, [], id="three-terminating-wait"),
        pytest.param("AAAA--", 0, 3, [3], id="missing-ordinals-count"),
        pytest.param("uAAnnn", 0, 3, [2, 1], id="unavailable-below-partition-counts"),
        # Phase 1: outdated and unavailable pods go at once, even past the budget.
        pytest.param("AUUUUA", 0, 3, [4, 3, 2, 1], id="phase-1-unavailable-old-all-go"),
        pytest.param("AUAAUA", 0, 3, [4, 1, 5], id="phase-1-then-budget-left"),
        pytest.param("AAAUUU", 3, 3, [5, 4, 3], id="phase-1-above-partition-only"),
        pytest.param("UUUAAA", 3, 3, [], id="unavailable-below-partition-blocks"),
        # Done.
        pytest.param("nnnnnn", 0, 3, [], id="all-updated"),
    ],
)
def test_replacement_table(row: str, partition: int, max_unavailable: int | str, expected: list[int]) -> None:
    lws = _lws(replicas=len(row), max_unavailable=max_unavailable)
    assert _deleted(lws, _sts(replicas=len(row), partition=partition), row) == expected


def test_reasons_name_the_phase() -> None:
    lws = _lws()
    deletions = leader_replacements(lws, _sts(), _pods("AUAAAA"))
    assert [(d.name, d.reason) for d in deletions] == [
        (f"{NAME}-1", REASON_UNAVAILABLE),
        (f"{NAME}-5", REASON_AVAILABLE),
        (f"{NAME}-4", REASON_AVAILABLE),
    ]
    assert deletions[0].uid == f"uid-{NAME}-1"


def test_pods_this_process_deleted_count_as_terminating() -> None:
    """A cache that does not show our own deletions yet cannot make the next round exceed the budget."""
    uids = {f"uid-{NAME}-5", f"uid-{NAME}-4", f"uid-{NAME}-3"}
    assert _deleted(_lws(), _sts(), "AAAAAA", deleted_uids=uids) == []
    assert _deleted(_lws(), _sts(), "AAAAAA", deleted_uids={f"uid-{NAME}-5"}) == [4, 3]


@pytest.mark.parametrize(
    ("sts_kwargs", "why"),
    [
        pytest.param({"max_unavailable": 3}, "gate on: the StatefulSet controller does it", id="gate-on"),
        pytest.param({"max_unavailable": 1}, "field stored: the gate is on", id="gate-on-stored-1"),
        pytest.param({"update_revision": None}, "no update revision yet", id="no-update-revision"),
        pytest.param(
            {"generation": 2, "observed_generation": 1}, "update revision may be stale", id="stale-status"
        ),
    ],
)
def test_nothing_to_do(sts_kwargs: dict[str, Any], why: str) -> None:
    kwargs = {"update_revision": NEW, **sts_kwargs}
    sts = leader_sts(NAME, replicas=6, **kwargs)
    assert leader_replacements(_lws(), sts, _pods("AAAAAA")) == (), why


def test_nothing_once_the_statefulset_finished_rolling() -> None:
    """currentRevision == updateRevision: every pod is updated, the leader pods need not be read."""
    sts = _sts()
    assert may_replace(_lws(), sts)
    sts["status"]["currentRevision"] = NEW
    assert not may_replace(_lws(), sts)
    assert leader_replacements(_lws(), sts, _pods("AAAAAA")) == ()
    sts["status"]["currentRevision"] = OLD
    assert may_replace(_lws(), sts)


def test_nothing_when_maxunavailable_is_one() -> None:
    """One at a time is what the StatefulSet controller does anyway."""
    assert leader_replacements(_lws(max_unavailable=1), _sts(), _pods("AAAAAA")) == ()


def test_nothing_for_ondelete_or_a_deleting_statefulset() -> None:
    sts = _sts()
    sts["spec"]["updateStrategy"]["type"] = "OnDelete"
    assert leader_replacements(_lws(), sts, _pods("AAAAAA")) == ()
    deleting = _sts()
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert leader_replacements(_lws(), deleting, _pods("AAAAAA")) == ()


def test_only_pods_of_this_statefulset_within_replicas() -> None:
    """Surge ordinals above spec.replicas are the StatefulSet's to remove, and pods of another
    incarnation of the StatefulSet (owner UID) are not its pods."""
    sts = _sts(replicas=4)
    assert _deleted(_lws(replicas=4), sts, "AAAAAA") == [3, 2, 1]
    sts["metadata"]["uid"] = "another-incarnation"
    assert _deleted(_lws(replicas=4), sts, "AAAA") == []
    sts["metadata"]["uid"] = "leader-sts-uid"
    assert _deleted(_lws(replicas=4), sts, "AAAA") == [3, 2, 1]
