"""Bounded group recovery: restart-count arithmetic, exhaustion patches, recover and teardown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle.restartbudget import (
    ExhaustedStep,
    RestartBudgetStep,
    RestartCountsError,
    budget_exceeded_event,
    claim_hash_count,
    claim_patch,
    decide_restart_budget,
    encode_restart_counts,
    exhaust_leader_patch,
    exhausted_leader_step,
    group_members,
    hash_teardown_requested,
    hold_pod_patch,
    ordinal_teardown_requested,
    parse_restart_counts,
    prune_hash_counts,
    prune_other_revisions,
    prune_settled_counts,
    raise_count,
    release_pod_patch,
    restart_count_key,
)
from tests.support.builders import leader_pod, leader_sts

FIN = c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP
EXHAUSTED = {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}


def leader(index: int = 0, revision: str = "rev", **kw: Any) -> dict[str, Any]:
    pod = leader_pod("lws", index, revision, **kw)
    pod["metadata"]["resourceVersion"] = "42"
    return pod


def with_finalizers(pod: dict[str, Any], *finalizers: str) -> dict[str, Any]:
    pod["metadata"]["finalizers"] = list(finalizers)
    return pod


# --- parsing and encoding -----------------------------------------------------------------------


@dataclass(frozen=True)
class ParseCase:
    raw: str
    want: dict[str, int] | None = None
    want_error: str = ""


PARSE_CASES = [
    # upstream parseGroupRestartCounts rows first
    pytest.param(ParseCase("", {}), id="empty annotation is an empty map"),
    pytest.param(ParseCase('{"rev/0":2,"rev/1":0}', {"rev/0": 2, "rev/1": 0}), id="valid counts"),
    pytest.param(ParseCase('{"rev/0":-1}', want_error="must be non-negative"), id="negative count rejected"),
    pytest.param(ParseCase("null", want_error="expected a JSON object"), id="null is not an object"),
    pytest.param(ParseCase("[1]", want_error="expected a JSON object"), id="array is not an object"),
    pytest.param(ParseCase("{", want_error="invalid group restart counts"), id="broken JSON"),
    pytest.param(ParseCase('{"rev/0":"2"}', want_error="must be an integer"), id="string count rejected"),
    pytest.param(ParseCase('{"rev/0":true}', want_error="must be an integer"), id="boolean count rejected"),
]


@pytest.mark.parametrize("case", PARSE_CASES)
def test_parse_restart_counts(case: ParseCase) -> None:
    if case.want_error:
        with pytest.raises(RestartCountsError, match=case.want_error):
            parse_restart_counts(case.raw)
    else:
        assert parse_restart_counts(case.raw) == case.want


def test_parse_cases_count() -> None:
    assert len(PARSE_CASES) == 8


def test_encoding_is_go_marshal_sorted_and_empty_removes() -> None:
    assert encode_restart_counts({"rev/1": 1, "rev/0": 3}) == '{"rev/0":3,"rev/1":1}'
    assert encode_restart_counts({}) is None


def test_count_key_is_revision_and_group_index() -> None:
    assert restart_count_key(leader(3, "abc")) == "abc/3"


# --- consume or exhaust ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetCase:
    counts: dict[str, int]
    limit: int
    claim: str | None = None
    want_step: RestartBudgetStep = RestartBudgetStep.CONSUME
    want_count: int = 1
    want_claimed: bool = False


BUDGET_CASES = [
    pytest.param(BudgetCase({}, 2), id="first failure consumes 1"),
    pytest.param(BudgetCase({"rev/0": 1}, 2, want_count=2), id="second failure consumes 2"),
    pytest.param(
        BudgetCase({"rev/0": 2}, 2, want_step=RestartBudgetStep.EXHAUST, want_count=2),
        id="limit reached exhausts",
    ),
    pytest.param(
        BudgetCase({}, 0, want_step=RestartBudgetStep.EXHAUST, want_count=0),
        id="zero budget: first failure exhausts",
    ),
    pytest.param(BudgetCase({"rev/1": 5}, 1), id="another group's count does not matter"),
    pytest.param(BudgetCase({"old/0": 5}, 1), id="another revision's count does not matter"),
    pytest.param(
        BudgetCase({"rev/0": 2}, 2, claim="2", want_count=2, want_claimed=True),
        id="claim written before a crash is finished, not counted again",
    ),
    pytest.param(
        BudgetCase({"rev/0": 1}, 2, claim="2", want_count=2, want_claimed=True),
        id="claim recorded but count not yet written: write the claim",
    ),
    pytest.param(BudgetCase({"rev/0": 1}, 2, claim="bad", want_count=2), id="unreadable claim is ignored"),
]


@pytest.mark.parametrize("case", BUDGET_CASES)
def test_decide_restart_budget(case: BudgetCase) -> None:
    annotations = {ext.ANNOTATION_GROUP_RESTART_CLAIM: case.claim} if case.claim is not None else None
    decision = decide_restart_budget(case.counts, leader(annotations=annotations), case.limit)
    assert (decision.step, decision.count, decision.claimed) == (
        case.want_step,
        case.want_count,
        case.want_claimed,
    )
    assert decision.key == "rev/0"


def test_budget_cases_count() -> None:
    assert len(BUDGET_CASES) == 9


@dataclass(frozen=True)
class RaiseCase:
    counts: dict[str, int]
    value: int
    want: dict[str, int]
    want_changed: bool


RAISE_CASES = [
    pytest.param(RaiseCase({}, 1, {"k": 1}, True), id="new key"),
    pytest.param(RaiseCase({"k": 1}, 2, {"k": 2}, True), id="moves up"),
    pytest.param(RaiseCase({"k": 3}, 2, {"k": 3}, False), id="never overwrites a newer count"),
    pytest.param(RaiseCase({"k": 2}, 2, {"k": 2}, False), id="same value is idempotent"),
]


@pytest.mark.parametrize("case", RAISE_CASES)
def test_raise_count(case: RaiseCase) -> None:
    counts = dict(case.counts)
    assert raise_count(counts, "k", case.value) is case.want_changed
    assert counts == case.want


def test_raise_cases_count() -> None:
    assert len(RAISE_CASES) == 4


def test_prune_drops_other_revisions_and_removed_indexes() -> None:
    counts = {"rev/0": 1, "rev/3": 2, "old/0": 4, "rev/x": 1}
    assert prune_settled_counts(counts, "rev", replicas=2)
    assert counts == {"rev/0": 1}
    assert not prune_settled_counts(counts, "rev", replicas=2)


def test_claim_patch_is_conditional() -> None:
    assert claim_patch(leader(), 3) == {
        "metadata": {"resourceVersion": "42", "annotations": {ext.ANNOTATION_GROUP_RESTART_CLAIM: "3"}}
    }


# --- patches ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchCase:
    annotations: dict[str, str] = field(default_factory=dict)
    finalizers: tuple[str, ...] = ()
    want: dict[str, Any] | None = None


EXHAUST_CASES = [
    pytest.param(
        PatchCase(want={"annotations": EXHAUSTED, "finalizers": [FIN]}),
        id="first exhaustion marks and holds",
    ),
    pytest.param(
        PatchCase(
            annotations={c.ANNOTATION_RECOVER: "true"},
            finalizers=("foregroundDeletion",),
            want={
                "annotations": {**EXHAUSTED, c.ANNOTATION_RECOVER: None},
                "finalizers": ["foregroundDeletion", FIN],
            },
        ),
        id="a recover set before exhaustion is dropped; other finalizers kept",
    ),
    pytest.param(
        PatchCase(
            annotations={**EXHAUSTED, c.ANNOTATION_RECOVER: "true"},
            want={"annotations": EXHAUSTED, "finalizers": [FIN]},
        ),
        id="already marked but not held: hold, keep the recover request",
    ),
    pytest.param(PatchCase(annotations=EXHAUSTED, finalizers=(FIN,), want=None), id="already done"),
]


@pytest.mark.parametrize("case", EXHAUST_CASES)
def test_exhaust_leader_patch(case: PatchCase) -> None:
    pod = with_finalizers(leader(annotations=case.annotations), *case.finalizers)
    want = None if case.want is None else {"metadata": {"resourceVersion": "42", **case.want}}
    assert exhaust_leader_patch(pod) == want


def test_exhaust_cases_count() -> None:
    assert len(EXHAUST_CASES) == 4


def test_hold_and_release_patches() -> None:
    pod = leader()
    assert hold_pod_patch(pod) == {"metadata": {"resourceVersion": "42", "finalizers": [FIN]}}
    assert hold_pod_patch(with_finalizers(leader(), FIN)) is None
    assert hold_pod_patch(leader(deleting=True)) is None
    held = with_finalizers(leader(annotations={**EXHAUSTED, c.ANNOTATION_RECOVER: "true"}), "x", FIN)
    assert release_pod_patch(held) == {
        "metadata": {
            "resourceVersion": "42",
            "finalizers": ["x"],
            "annotations": {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: None, c.ANNOTATION_RECOVER: None},
        }
    }
    assert release_pod_patch(leader()) is None


def test_group_members_are_same_revision_workers_first() -> None:
    lead = leader(1, "rev")
    worker = leader(1, "rev", name="lws-1-1")
    worker["metadata"]["labels"][c.LABEL_WORKER_INDEX] = "1"
    stale = leader(1, "old", name="lws-1-2")
    other = leader(2, "rev")
    assert [p["metadata"]["name"] for p in group_members(lead, [lead, stale, other, worker])] == [
        "lws-1-1",
        "lws-1",
    ]


# --- exhausted leaders and teardown -------------------------------------------------------------


@dataclass(frozen=True)
class ExhaustedCase:
    teardown: bool
    deleting: bool
    recover: str | None
    want: ExhaustedStep


EXHAUSTED_CASES = [
    pytest.param(ExhaustedCase(True, True, None, ExhaustedStep.RELEASE), id="teardown releases"),
    pytest.param(ExhaustedCase(True, False, "true", ExhaustedStep.RELEASE), id="teardown wins over recover"),
    pytest.param(ExhaustedCase(False, True, "true", ExhaustedStep.RECOVER), id="recover on retained leader"),
    pytest.param(ExhaustedCase(False, True, "yes", ExhaustedStep.WAIT), id="recover other than true ignored"),
    pytest.param(ExhaustedCase(False, True, None, ExhaustedStep.WAIT), id="retained waits"),
    pytest.param(
        ExhaustedCase(False, False, None, ExhaustedStep.TERMINATE), id="marked, not deleted: delete"
    ),
]


@pytest.mark.parametrize("case", EXHAUSTED_CASES)
def test_exhausted_leader_step(case: ExhaustedCase) -> None:
    annotations = dict(EXHAUSTED)
    if case.recover is not None:
        annotations[c.ANNOTATION_RECOVER] = case.recover
    pod = leader(annotations=annotations, deleting=case.deleting)
    assert exhausted_leader_step(pod, teardown=case.teardown) is case.want


def test_exhausted_cases_count() -> None:
    assert len(EXHAUSTED_CASES) == 6


@dataclass(frozen=True)
class TeardownCase:
    index: int
    leader_revision: str
    sts_replicas: int | None
    sts_revision: str = "rev"
    partition: int = 0
    want: bool = False


TEARDOWN_CASES = [
    # upstream groupLifecycleTeardownRequested (Ordinal) rows
    pytest.param(TeardownCase(2, "rev", 2, want=True), id="scaled down below the group"),
    pytest.param(TeardownCase(1, "rev", 2), id="kept group on the current revision"),
    pytest.param(TeardownCase(1, "old", 2, want=True), id="rollout reaches the group"),
    pytest.param(TeardownCase(0, "old", 2, partition=1), id="rollout partition above the group"),
    pytest.param(TeardownCase(1, "old", 2, sts_revision=""), id="no desired revision yet"),
    pytest.param(TeardownCase(3, "rev", 4), id="surge ordinal still wanted"),
    pytest.param(TeardownCase(0, "rev", None), id="no leader statefulset"),
]


@pytest.mark.parametrize("case", TEARDOWN_CASES)
def test_ordinal_teardown_requested(case: TeardownCase) -> None:
    sts = None
    if case.sts_replicas is not None:
        sts = leader_sts("lws", replicas=case.sts_replicas, partition=case.partition)
        if case.sts_revision:
            sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = case.sts_revision
    assert ordinal_teardown_requested(leader(case.index, case.leader_revision), sts) is case.want


def test_teardown_cases_count() -> None:
    assert len(TEARDOWN_CASES) == 7


def test_budget_exceeded_event() -> None:
    event = budget_exceeded_event(leader(3))
    assert (event.type, event.reason, event.action) == ("Warning", "ReplicaRestartBudgetExceeded", "Delete")
    assert event.message == "Restart budget exhausted; terminated group 3 and stopped automatic recovery"
    assert event.related == ("Pod", "lws-3")


# --- Hash identity: the budget follows the group across incarnations -------------------------------

HASH_EXHAUSTED = {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}


def hleader(
    key: str,
    *,
    revision: str = "rev",
    deleting: bool = False,
    exhausted: bool = False,
    gated: bool = False,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    pod = leader_pod(
        "lws",
        0,
        revision,
        name=f"lws-{key}",
        group_index=key,
        deleting=deleting,
        annotations=HASH_EXHAUSTED if exhausted else None,
    )
    pod["metadata"]["creationTimestamp"] = created
    if gated:
        pod["spec"]["schedulingGates"] = [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}]
    return pod


@dataclass(frozen=True)
class ClaimCase:
    counts: dict[str, int]
    leaders: list[dict[str, Any]]
    want: dict[str, int]


CLAIM_CASES = [
    # upstream claimGroupRestartCountForHashLeader rows
    pytest.param(
        ClaimCase({"rev/old1": 2}, [hleader("old1", deleting=True)], {"rev/new": 2}),
        id="replacement inherits the dead incarnation's count",
    ),
    pytest.param(
        ClaimCase({"rev/a": 1, "rev/b": 3, "rev/c": 3}, [], {"rev/a": 1, "rev/c": 3, "rev/new": 3}),
        id="highest unowned count, ties to the smallest key",
    ),
    pytest.param(
        ClaimCase({"rev/live": 2}, [hleader("live")], {"rev/live": 2}), id="a live group's count is owned"
    ),
    pytest.param(
        ClaimCase({"rev/held": 2}, [hleader("held", deleting=True, exhausted=True)], {"rev/held": 2}),
        id="a retained group's count is owned",
    ),
    pytest.param(ClaimCase({"old/x": 2}, [], {"old/x": 2}), id="other revisions are not inherited"),
    pytest.param(ClaimCase({"rev/new": 1, "rev/x": 5}, [], {"rev/new": 1, "rev/x": 5}), id="own count kept"),
]


@pytest.mark.parametrize("case", CLAIM_CASES)
def test_claim_hash_count(case: ClaimCase) -> None:
    counts = dict(case.counts)
    changed = claim_hash_count(counts, hleader("new", gated=True), case.leaders)
    assert counts == case.want
    assert changed is (counts != case.counts)


def test_claim_cases_count() -> None:
    assert len(CLAIM_CASES) == 6


def test_prune_hash_counts_keeps_only_claimable_entries() -> None:
    # replicas 2, no surge: two live groups occupy both slots, so no unowned entry can be claimed.
    leaders = [hleader("a"), hleader("b")]
    counts = {"rev/a": 1, "rev/gone1": 2, "rev/gone2": 1, "old/x": 1}
    assert prune_hash_counts(counts, "rev", leaders, replicas=2, surge=0)
    assert counts == {"rev/a": 1, "old/x": 1}
    # One slot free (a replacement is on its way): the highest unowned entry survives.
    counts = {"rev/gone1": 2, "rev/gone2": 1}
    assert prune_hash_counts(counts, "rev", [hleader("a")], replicas=2, surge=0)
    assert counts == {"rev/gone1": 2}
    assert not prune_hash_counts(counts, "rev", [hleader("a")], replicas=2, surge=0)


def test_prune_other_revisions() -> None:
    counts = {"rev/a": 1, "old/b": 2}
    assert prune_other_revisions(counts, "rev")
    assert counts == {"rev/a": 1}


@dataclass(frozen=True)
class HashTeardownCase:
    leaders: list[dict[str, Any]]
    candidate: str
    desired: str
    want_release: bool
    want_clear: bool = False


HASH_TEARDOWN_CASES = [
    pytest.param(
        HashTeardownCase([hleader("x", exhausted=True, deleting=True)], "x", "new", True),
        id="rollout releases",
    ),
    pytest.param(
        HashTeardownCase([hleader("x", exhausted=True, deleting=True), hleader("a")], "x", "rev", False),
        id="retained within its slots",
    ),
    pytest.param(
        HashTeardownCase(
            [
                hleader("x", exhausted=True, deleting=True, created="2026-01-01T00:00:01Z"),
                hleader("y", exhausted=True, deleting=True, created="2026-01-01T00:00:02Z"),
                hleader("a"),
            ],
            "y",
            "rev",
            True,
            True,
        ),
        id="scale-down: the later retained group is released and its count cleared",
    ),
]


@pytest.mark.parametrize("case", HASH_TEARDOWN_CASES)
def test_hash_teardown_requested(case: HashTeardownCase) -> None:
    candidate = next(p for p in case.leaders if p["metadata"]["name"] == f"lws-{case.candidate}")
    got = hash_teardown_requested(
        candidate, desired_revision=case.desired, replicas=2, leader_pods=case.leaders
    )
    assert (got.release, got.clear_count) == (case.want_release, case.want_clear)


def test_hash_teardown_cases_count() -> None:
    assert len(HASH_TEARDOWN_CASES) == 3
