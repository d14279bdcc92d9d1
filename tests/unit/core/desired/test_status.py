"""LeaderWorkerSet status and its condition rules (one case per rule)."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import (
    apply_conditions,
    exclusive_condition_types,
    format_time,
    invalid_spec_conditions,
    set_condition,
)
from leaderworkerset.core.desired.status import (
    GroupCounts,
    count_groups,
    desired_condition_types,
    hpa_pod_selector,
    make_condition,
    omit_empty,
    plan_status,
)
from leaderworkerset.core.gocompat.strconv import GoParseError
from tests.support.builders import (
    LeaderWorkerSetBuilder,
    cached_lws,
    leader_pod,
    leader_sts,
    worker_statefulset,
)

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
NOW = datetime(2026, 1, 1, 12, 30, 45, 123456, tzinfo=UTC)
AVAILABLE, PROGRESSING, UPDATING = (
    c.CONDITION_AVAILABLE,
    c.CONDITION_PROGRESSING,
    c.CONDITION_UPDATE_IN_PROGRESS,
)


def stored(
    condition_type: str, status: str = c.CONDITION_TRUE, generation: int = 1, **extra: Any
) -> dict[str, Any]:
    cond = make_condition(condition_type, generation, T0)
    cond["status"] = status
    cond.update(extra)
    return cond


def summary(conditions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(cond["type"], cond["status"]) for cond in conditions]


def test_format_time_is_rfc3339_seconds_utc() -> None:
    assert format_time(NOW) == "2026-01-01T12:30:45Z"


def test_hpa_pod_selector_sorted_keys() -> None:
    assert (
        hpa_pod_selector("lws")
        == "leaderworkerset.sigs.k8s.io/name=lws,leaderworkerset.sigs.k8s.io/worker-index=0"
    )


@pytest.mark.parametrize(
    ("condition_type", "want_reason", "want_message"),
    [
        pytest.param(AVAILABLE, "AllGroupsReady", "All replicas are ready", id="available"),
        pytest.param(UPDATING, "GroupsUpdating", "Rolling Upgrade is in progress", id="update in progress"),
        pytest.param(PROGRESSING, "GroupsProgressing", "Replicas are progressing", id="progressing"),
    ],
)
def test_make_condition(condition_type: str, want_reason: str, want_message: str) -> None:
    assert make_condition(condition_type, 3, NOW) == {
        "type": condition_type,
        "status": "True",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-01-01T12:30:45Z",
        "reason": want_reason,
        "message": want_message,
    }


# Upstream's TestExclusiveConditionTypes.
@pytest.mark.parametrize(
    ("first", "second", "want"),
    [
        pytest.param(AVAILABLE, PROGRESSING, True, id="available then progressing"),
        pytest.param(PROGRESSING, AVAILABLE, True, id="progressing then available"),
        pytest.param(PROGRESSING, PROGRESSING, False, id="same conditions"),
        pytest.param(UPDATING, AVAILABLE, True, id="update in progress then available"),
        pytest.param(AVAILABLE, UPDATING, True, id="available then update in progress"),
        pytest.param(PROGRESSING, UPDATING, False, id="progressing then update in progress"),
        pytest.param(UPDATING, PROGRESSING, False, id="update in progress then progressing"),
    ],
)
def test_exclusive_condition_types(first: str, second: str, want: bool) -> None:
    assert exclusive_condition_types(first, second) is want


# Upstream's TestSetCondition.
@pytest.mark.parametrize(
    ("current", "new", "want_changed"),
    [
        pytest.param(
            [{"type": PROGRESSING, "status": "False", "observedGeneration": 1}],
            {"type": PROGRESSING, "status": "True", "observedGeneration": 1},
            True,
            id="same type different status",
        ),
        pytest.param(
            [{"type": AVAILABLE, "status": "False", "observedGeneration": 1}],
            {"type": PROGRESSING, "status": "True", "observedGeneration": 1},
            True,
            id="different type new condition true",
        ),
        pytest.param(
            [], {"type": PROGRESSING, "status": "True", "observedGeneration": 1}, True, id="no condition"
        ),
        pytest.param(
            [{"type": PROGRESSING, "status": "False"}],
            {"type": PROGRESSING, "status": "False"},
            False,
            id="same type same status",
        ),
        pytest.param(
            [{"type": AVAILABLE, "status": "True", "observedGeneration": 1}],
            {"type": AVAILABLE, "status": "True", "observedGeneration": 2},
            True,
            id="same type same status but generation advanced",
        ),
        pytest.param(
            [], {"type": PROGRESSING, "status": "False"}, False, id="a missing type is never added as False"
        ),
    ],
)
def test_set_condition(current: list[dict[str, Any]], new: dict[str, Any], want_changed: bool) -> None:
    assert set_condition(current, new, NOW) is want_changed


@dataclass(frozen=True)
class ConditionsCase:
    stored: list[dict[str, Any]]
    desired: list[str]
    want: list[dict[str, Any]]
    want_changed: bool
    generation: int = 1


def _at(cond: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**cond, **changes}


NOW_S = "2026-01-01T12:30:45Z"

CONDITION_RULES = [
    pytest.param(
        ConditionsCase([], [PROGRESSING], [make_condition(PROGRESSING, 1, NOW)], True),
        id="a new condition is appended when true",
    ),
    pytest.param(
        ConditionsCase(
            [stored(UPDATING), stored(PROGRESSING)],
            [PROGRESSING],
            [stored(UPDATING), stored(PROGRESSING)],
            False,
        ),
        id="only true is ever set: UpdateInProgress stays true while merely progressing",
    ),
    pytest.param(
        ConditionsCase(
            [stored(UPDATING), stored(PROGRESSING)],
            [AVAILABLE],
            [
                _at(stored(UPDATING), status="False", lastTransitionTime=NOW_S),
                _at(stored(PROGRESSING), status="False", lastTransitionTime=NOW_S),
                make_condition(AVAILABLE, 1, NOW),
            ],
            True,
        ),
        id="available flips both exclusive conditions false keeping reason and message",
    ),
    pytest.param(
        ConditionsCase(
            [stored(PROGRESSING, status="False", reason="Old", message="old")],
            [PROGRESSING],
            [make_condition(PROGRESSING, 1, NOW)],
            True,
        ),
        id="a status change replaces the stored condition wholesale",
    ),
    pytest.param(
        ConditionsCase(
            [stored(AVAILABLE, generation=1)],
            [AVAILABLE],
            [make_condition(AVAILABLE, 2, NOW)],
            True,
            generation=2,
        ),
        id="a generation change refreshes the lastTransitionTime",
    ),
    pytest.param(
        ConditionsCase(
            [stored(PROGRESSING, reason="Custom", message="kept")],
            [PROGRESSING],
            [stored(PROGRESSING, reason="Custom", message="kept")],
            False,
        ),
        id="same status and generation: nothing changes even if reason and message differ",
    ),
    pytest.param(
        ConditionsCase(
            [stored(AVAILABLE)],
            [UPDATING, PROGRESSING],
            [
                _at(stored(AVAILABLE), status="False", lastTransitionTime=NOW_S),
                make_condition(UPDATING, 1, NOW),
            ],
            True,
        ),
        id="short circuit: the first change stops the list, Progressing waits a reconcile",
    ),
    pytest.param(
        ConditionsCase(
            [_at(stored(AVAILABLE), status="False"), stored(UPDATING)],
            [UPDATING, PROGRESSING],
            [_at(stored(AVAILABLE), status="False"), stored(UPDATING), make_condition(PROGRESSING, 1, NOW)],
            True,
        ),
        id="the next reconcile adds Progressing",
    ),
    pytest.param(
        ConditionsCase(
            [stored(PROGRESSING, generation=1), stored(c.CONDITION_DEGRADED, status="False", generation=1)],
            [PROGRESSING],
            [make_condition(PROGRESSING, 2, NOW), stored(c.CONDITION_DEGRADED, status="False", generation=2)],
            True,
            generation=2,
        ),
        id="every stored condition gets the new observedGeneration",
    ),
    pytest.param(
        ConditionsCase(
            [stored(UPDATING, generation=1), stored(PROGRESSING, generation=1)],
            [UPDATING, PROGRESSING],
            [make_condition(UPDATING, 2, NOW), stored(PROGRESSING, generation=2)],
            True,
            generation=2,
        ),
        id="after a short circuit the skipped condition only has its generation bumped",
    ),
]


@pytest.mark.parametrize("case", CONDITION_RULES)
def test_apply_conditions(case: ConditionsCase) -> None:
    desired = [make_condition(t, case.generation, NOW) for t in case.desired]
    conditions, changed = apply_conditions(case.stored, desired, case.generation, NOW)
    assert conditions == case.want
    assert changed is case.want_changed


def test_apply_conditions_does_not_mutate_input() -> None:
    original = [stored(AVAILABLE)]
    apply_conditions(original, [make_condition(PROGRESSING, 1, NOW)], 1, NOW)
    assert original == [stored(AVAILABLE)]


def test_flip_takes_the_new_conditions_generation() -> None:
    conditions = [stored(PROGRESSING, generation=1)]
    set_condition(conditions, make_condition(AVAILABLE, 5, NOW), NOW)
    assert conditions[0]["observedGeneration"] == 5
    assert conditions[0]["reason"] == c.REASON_GROUPS_PROGRESSING


# --- counting groups -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grp:
    """One group for the count tests: index, revision of leader and worker STS, readiness."""

    index: int
    revision: str = "new"
    ready: bool = True
    worker_revision: str | None = None
    worker_ready: bool = True
    has_worker: bool = True


def _objects(groups: list[Grp], size: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    pods, stss = [], {}
    for g in groups:
        pod = leader_pod("test-sample", g.index, g.revision, ready=g.ready)
        pods.append(pod)
        if size > 1 and g.has_worker:
            worker = worker_statefulset(pod, ready=g.worker_ready)
            if g.worker_revision is not None:
                worker["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = g.worker_revision
            stss[pod["metadata"]["name"]] = worker
    return pods, stss


@dataclass(frozen=True)
class CountCase:
    groups: list[Grp]
    want: GroupCounts
    want_conditions: list[str]
    replicas: int = 2
    size: int = 2
    partition: int = 0


COUNT_CASES = [
    pytest.param(
        CountCase([Grp(0), Grp(1)], GroupCounts(2, 2, 2, 2, 2, 2), [AVAILABLE]),
        id="all ready and updated",
    ),
    pytest.param(
        CountCase([Grp(0, ready=False), Grp(1, ready=False)], GroupCounts(0, 2, 0, 2, 2, 0), [PROGRESSING]),
        id="creation: current revision but not ready is progressing, not updating",
    ),
    pytest.param(
        CountCase([Grp(0, "old"), Grp(1)], GroupCounts(2, 1, 2, 2, 1, 1), [UPDATING, PROGRESSING]),
        id="an outdated group means an update is in progress",
    ),
    pytest.param(
        CountCase(
            [Grp(0), Grp(1, worker_revision="old")], GroupCounts(2, 1, 2, 2, 1, 1), [UPDATING, PROGRESSING]
        ),
        id="an outdated worker statefulset counts as outdated",
    ),
    pytest.param(
        CountCase([Grp(0), Grp(1, worker_ready=False)], GroupCounts(1, 2, 1, 2, 2, 1), [PROGRESSING]),
        id="an unready worker statefulset makes the group unready",
    ),
    pytest.param(
        CountCase([Grp(0), Grp(1, has_worker=False)], GroupCounts(1, 1, 1, 1, 1, 1), [PROGRESSING]),
        id="a leader without its worker statefulset is not counted at all",
    ),
    pytest.param(
        CountCase([Grp(0), Grp(1, has_worker=False)], GroupCounts(2, 2, 2, 2, 2, 2), [AVAILABLE], size=1),
        id="size one needs no worker statefulset",
    ),
    pytest.param(
        CountCase([Grp(0), Grp(1), Grp(2, ready=False)], GroupCounts(2, 3, 2, 2, 2, 2), [AVAILABLE]),
        id="an unready surge group does not block availability",
    ),
    pytest.param(
        CountCase([Grp(0), Grp(1), Grp(2, "old")], GroupCounts(3, 2, 2, 2, 2, 2), [AVAILABLE]),
        id="an outdated surge group is not an update in progress",
    ),
    pytest.param(
        CountCase([Grp(0, "old"), Grp(1)], GroupCounts(2, 1, 2, 1, 1, 1), [AVAILABLE], partition=1),
        id="outdated groups below the user partition do not count",
    ),
    pytest.param(
        CountCase(
            [Grp(0, "old", ready=False), Grp(1)], GroupCounts(1, 1, 1, 1, 1, 1), [PROGRESSING], partition=1
        ),
        id="unready groups below the partition still block availability",
    ),
    pytest.param(
        CountCase([Grp(0)], GroupCounts(1, 1, 1, 1, 1, 1), [PROGRESSING]),
        id="a missing group blocks availability but not as an update",
    ),
    pytest.param(CountCase([], GroupCounts(), [AVAILABLE], replicas=0), id="zero replicas is available"),
]


@pytest.mark.parametrize("case", COUNT_CASES)
def test_count_groups_and_conditions(case: CountCase) -> None:
    pods, stss = _objects(case.groups, case.size)
    counts = count_groups(
        replicas=case.replicas,
        size=case.size,
        user_partition=case.partition,
        revision_key="new",
        leader_pods=pods,
        worker_statefulsets=stss,
    )
    assert counts == case.want
    assert desired_condition_types(counts, case.replicas) == case.want_conditions


def test_count_groups_rejects_unparsable_group_index() -> None:
    pod = leader_pod("test-sample", 0, "new", group_index="zero")
    with pytest.raises(GoParseError):
        count_groups(
            replicas=1,
            size=1,
            user_partition=0,
            revision_key="new",
            leader_pods=[pod],
            worker_statefulsets={},
        )


# --- the whole status ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusCase:
    lws: LeaderWorkerSetBuilder
    groups: list[Grp]
    want_status: dict[str, Any]
    want_changed: bool
    want_update_done: bool
    want_event: tuple[str, str] | None
    sts_status_replicas: int = 2
    size: int = 2


def _status_case_lws(case: StatusCase) -> dict[str, Any]:
    return case.lws.size(case.size).obj()


SELECTOR = "leaderworkerset.sigs.k8s.io/name=test-sample,leaderworkerset.sigs.k8s.io/worker-index=0"
STEADY = {
    "replicas": 2,
    "observedGeneration": 1,
    "hpaPodSelector": SELECTOR,
    "readyReplicas": 2,
    "updatedReplicas": 2,
    "conditions": [stored(AVAILABLE)],
}

STATUS_CASES = [
    pytest.param(
        StatusCase(
            cached_lws().replicas(2),
            [Grp(0, ready=False), Grp(1, ready=False)],
            {
                "replicas": 2,
                "observedGeneration": 1,
                "hpaPodSelector": SELECTOR,
                "updatedReplicas": 2,  # readyReplicas 0 is omitted, as Go's omitempty does
                "conditions": [make_condition(PROGRESSING, 1, NOW)],
            },
            True,
            False,
            ("GroupsProgressing", "Replicas are progressing, with 0 groups ready of total 2 groups"),
        ),
        id="first status of a new set",
    ),
    pytest.param(
        StatusCase(
            cached_lws().replicas(0).status(STEADY),
            [],
            {
                "observedGeneration": 1,
                "hpaPodSelector": SELECTOR,
                "conditions": [stored(AVAILABLE)],
            },
            True,
            True,
            None,
            sts_status_replicas=0,
        ),
        id="scaled to 0: the zero counts are left out, not written as 0",
    ),
    pytest.param(
        StatusCase(
            cached_lws()
            .replicas(0)
            .status({**STEADY, "replicas": 0, "readyReplicas": 0, "updatedReplicas": 0}),
            [],
            {"observedGeneration": 1, "hpaPodSelector": SELECTOR, "conditions": [stored(AVAILABLE)]},
            True,
            True,
            None,
            sts_status_replicas=0,
        ),
        id="zero counts stored by an older controller are written once more, without them",
    ),
    pytest.param(
        StatusCase(
            cached_lws()
            .replicas(0)
            .status({"observedGeneration": 1, "hpaPodSelector": SELECTOR, "conditions": [stored(AVAILABLE)]}),
            [],
            {"observedGeneration": 1, "hpaPodSelector": SELECTOR, "conditions": [stored(AVAILABLE)]},
            False,
            True,
            None,
            sts_status_replicas=0,
        ),
        id="scaled to 0 and settled: nothing to write",
    ),
    pytest.param(
        StatusCase(cached_lws().replicas(2).status(STEADY), [Grp(0), Grp(1)], STEADY, False, True, None),
        id="steady state writes nothing and lets old revisions go",
    ),
    pytest.param(
        StatusCase(
            cached_lws().replicas(2).status({**STEADY, "hpaPodSelector": "custom"}),
            [Grp(0), Grp(1)],
            {**STEADY, "hpaPodSelector": "custom"},
            False,
            True,
            None,
        ),
        id="hpaPodSelector is set once and never rewritten",
    ),
    pytest.param(
        StatusCase(
            cached_lws().replicas(2).status(STEADY),
            [Grp(0), Grp(1), Grp(2, ready=False)],
            {**STEADY, "replicas": 3, "updatedReplicas": 3},
            True,
            True,
            None,
            sts_status_replicas=3,
        ),
        id="surge groups count in replicas and updatedReplicas",
    ),
    pytest.param(
        StatusCase(
            cached_lws().replicas(2).generation(2).status(STEADY),
            [Grp(0, "old"), Grp(1)],
            {
                **STEADY,
                "observedGeneration": 2,
                "updatedReplicas": 1,
                "conditions": [
                    _at(stored(AVAILABLE), status="False", lastTransitionTime=NOW_S, observedGeneration=2),
                    make_condition(UPDATING, 2, NOW),
                ],
            },
            True,
            False,
            ("GroupsUpdating", "Rolling Upgrade is in progress, with 2 groups ready of total 2 groups"),
        ),
        id="update starts: UpdateInProgress set, Available flipped, event uses the first condition",
    ),
    pytest.param(
        StatusCase(
            cached_lws().replicas(2).partition(1).status(STEADY),
            [Grp(0, "old"), Grp(1)],
            {**STEADY, "updatedReplicas": 1},
            True,
            False,
            None,
        ),
        id="a user partition keeps the update from being done",
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES)
def test_plan_status(case: StatusCase) -> None:
    pods, stss = _objects(case.groups, case.size)
    plan = plan_status(
        _status_case_lws(case),
        leader_sts("test-sample", replicas=2, status_replicas=case.sts_status_replicas),
        revision_key="new",
        leader_pods=pods,
        worker_statefulsets=stss,
        now=NOW,
    )
    assert plan.status == case.want_status
    assert plan.changed is case.want_changed
    assert plan.update_done is case.want_update_done
    assert (None if plan.event is None else (plan.event.reason, plan.event.message)) == case.want_event


def test_condition_event_is_normal_update() -> None:
    pods, stss = _objects([Grp(0)], 1)
    plan = plan_status(
        cached_lws().obj(),
        leader_sts("test-sample", replicas=1, status_replicas=1),
        revision_key="new",
        leader_pods=pods,
        worker_statefulsets=stss,
        now=NOW,
    )
    assert plan.event is not None
    assert (plan.event.type, plan.event.action) == (c.EVENT_TYPE_NORMAL, c.EVENT_ACTION_UPDATE)
    assert plan.event.message == "All replicas are ready, with 1 groups ready of total 1 groups"


def test_status_progression_through_an_update() -> None:
    """Reconcile after reconcile: Available → UpdateInProgress (+Available False) → +Progressing →
    (update finished, not all ready) UpdateInProgress still True → Available flips both off."""
    lws = cached_lws().replicas(2).status(STEADY)
    history: list[list[tuple[str, str]]] = []

    def reconcile(groups: list[Grp]) -> None:
        pods, stss = _objects(groups, 2)
        obj = lws.obj()
        plan = plan_status(
            obj,
            leader_sts("test-sample", replicas=2, status_replicas=2),
            revision_key="new",
            leader_pods=pods,
            worker_statefulsets=stss,
            now=NOW,
        )
        lws.status(plan.status)
        history.append(summary(plan.status["conditions"]))

    reconcile([Grp(0, "old"), Grp(1, "old")])
    reconcile([Grp(0, "old"), Grp(1, ready=False)])
    reconcile([Grp(0, ready=False), Grp(1, ready=False)])
    reconcile([Grp(0), Grp(1)])
    assert history == [
        [(AVAILABLE, "False"), (UPDATING, "True")],
        [(AVAILABLE, "False"), (UPDATING, "True"), (PROGRESSING, "True")],
        [(AVAILABLE, "False"), (UPDATING, "True"), (PROGRESSING, "True")],
        [(AVAILABLE, "True"), (UPDATING, "False"), (PROGRESSING, "False")],
    ]


def test_format_time_naive_is_utc() -> None:
    assert format_time(datetime(2026, 1, 1, 12, 30, 45)) == "2026-01-01T12:30:45Z"


# --- Go's omitempty: one case per field we write -------------------------------------------------


@dataclass(frozen=True)
class OmitCase:
    status: dict[str, Any]
    want: dict[str, Any]


COND = {"type": AVAILABLE, "status": "True", "lastTransitionTime": NOW_S, "reason": "R", "message": "M"}

OMIT_CASES = [
    *[
        pytest.param(OmitCase({field: 0}, {}), id=f"{field} 0 is omitted")
        for field in ("replicas", "readyReplicas", "updatedReplicas", "observedGeneration")
    ],
    *[
        pytest.param(OmitCase({field: 3}, {field: 3}), id=f"{field} 3 is written")
        for field in ("replicas", "readyReplicas", "updatedReplicas", "observedGeneration")
    ],
    pytest.param(OmitCase({"hpaPodSelector": ""}, {}), id="empty hpaPodSelector is omitted"),
    pytest.param(
        OmitCase({"hpaPodSelector": SELECTOR}, {"hpaPodSelector": SELECTOR}), id="hpaPodSelector kept"
    ),
    pytest.param(OmitCase({"conditions": []}, {}), id="no conditions: the list is omitted"),
    pytest.param(OmitCase({"replicas": None}, {}), id="null reads as absent"),
    pytest.param(
        OmitCase({"conditions": [{**COND, "observedGeneration": 0}]}, {"conditions": [COND]}),
        id="condition observedGeneration 0 is omitted",
    ),
    pytest.param(
        OmitCase(
            {"conditions": [{**COND, "observedGeneration": 2}]},
            {"conditions": [{**COND, "observedGeneration": 2}]},
        ),
        id="condition observedGeneration 2 is written",
    ),
    pytest.param(
        OmitCase(
            {"conditions": [{**COND, "reason": "", "message": ""}]},
            {"conditions": [{**COND, "reason": "", "message": ""}]},
        ),
        id="condition reason and message are never omitted",
    ),
    pytest.param(
        OmitCase({"replicas": False}, {"replicas": False}), id="a mistyped value is not taken for 0"
    ),
]


# --- Degraded: groups retained after exhausting maxGroupRestarts (v1.0) ---------------------------

EXHAUSTED = {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}
DEGRADED = c.CONDITION_DEGRADED


@dataclass(frozen=True)
class DegradedCase:
    leaders: list[tuple[str, bool, bool]]  # (revision, ready, exhausted) for index 0..
    stored: list[dict[str, Any]]
    want_conditions: list[tuple[str, str]]
    want_event_reason: str | None


def _degraded_leaders(rows: list[tuple[str, bool, bool]]) -> list[dict[str, Any]]:
    pods = []
    for i, (revision, ready, exhausted) in enumerate(rows):
        pods.append(
            leader_pod(
                "lws",
                i,
                revision,
                ready=ready,
                deleting=exhausted,
                annotations=EXHAUSTED if exhausted else None,
            )
        )
    return pods


DEGRADED_CASES = [
    pytest.param(
        DegradedCase(
            [("rev", True, False), ("rev", False, True)],
            [stored(AVAILABLE)],
            [(AVAILABLE, c.CONDITION_FALSE)],
            c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
        ),
        id="exhaustion turns Available False first (short-circuit), event names the budget",
    ),
    pytest.param(
        DegradedCase(
            [("rev", True, False), ("rev", False, True)],
            [stored(AVAILABLE, c.CONDITION_FALSE), stored(PROGRESSING, c.CONDITION_FALSE)],
            [(AVAILABLE, c.CONDITION_FALSE), (PROGRESSING, c.CONDITION_FALSE), (DEGRADED, c.CONDITION_TRUE)],
            c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
        ),
        id="nothing else progressing: Degraded appended True",
    ),
    pytest.param(
        DegradedCase(
            [("rev", False, False), ("rev", False, True)],
            [stored(AVAILABLE, c.CONDITION_FALSE), stored(PROGRESSING, c.CONDITION_FALSE)],
            [(AVAILABLE, c.CONDITION_FALSE), (PROGRESSING, c.CONDITION_TRUE)],
            c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
        ),
        id="another group still starting keeps Progressing True",
    ),
    pytest.param(
        DegradedCase(
            [("rev", True, False), ("rev", True, False)],
            [
                stored(AVAILABLE, c.CONDITION_FALSE),
                stored(PROGRESSING, c.CONDITION_FALSE),
                stored(DEGRADED, c.CONDITION_TRUE),
            ],
            [(AVAILABLE, c.CONDITION_TRUE), (PROGRESSING, c.CONDITION_FALSE), (DEGRADED, c.CONDITION_TRUE)],
            c.REASON_ALL_GROUPS_READY,
        ),
        id="after recover: Available first",
    ),
    pytest.param(
        DegradedCase(
            [("rev", True, False), ("rev", True, False)],
            [stored(AVAILABLE), stored(PROGRESSING, c.CONDITION_FALSE), stored(DEGRADED, c.CONDITION_TRUE)],
            [(AVAILABLE, c.CONDITION_TRUE), (PROGRESSING, c.CONDITION_FALSE), (DEGRADED, c.CONDITION_FALSE)],
            c.REASON_ALL_GROUPS_READY,
        ),
        id="then Degraded turns False AsExpected",
    ),
    pytest.param(
        DegradedCase(
            [("old", True, False), ("rev", False, True)],
            [stored(AVAILABLE, c.CONDITION_FALSE), stored(PROGRESSING, c.CONDITION_FALSE)],
            [
                (AVAILABLE, c.CONDITION_FALSE),
                (PROGRESSING, c.CONDITION_FALSE),
                (UPDATING, c.CONDITION_TRUE),
            ],
            c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
        ),
        id="rollout with a retained group: UpdateInProgress True",
    ),
    pytest.param(
        DegradedCase(
            [("rev", True, False), ("rev", True, False)],
            [stored(AVAILABLE)],
            [(AVAILABLE, c.CONDITION_TRUE)],
            None,
        ),
        id="never degraded: no Degraded condition is added",
    ),
]


@pytest.mark.parametrize("case", OMIT_CASES)
def test_omit_empty(case: OmitCase) -> None:
    assert omit_empty(case.status) == case.want


def test_omit_empty_covers_every_status_field_upstream_declares() -> None:
    # LeaderWorkerSetStatus (api/leaderworkerset/v1) tags every field `omitempty`: all at their
    # zero value, nothing is left.
    zero_status = {
        "conditions": [],
        "readyReplicas": 0,
        "updatedReplicas": 0,
        "replicas": 0,
        "hpaPodSelector": "",
        "observedGeneration": 0,
    }
    assert omit_empty(zero_status) == {}


@pytest.mark.parametrize("case", DEGRADED_CASES)
def test_degraded_conditions(case: DegradedCase) -> None:
    lws = cached_lws("lws").replicas(2).size(1).status({"conditions": case.stored}).obj()
    plan = plan_status(
        lws,
        leader_sts("lws", replicas=2, status_replicas=2),
        revision_key="rev",
        leader_pods=_degraded_leaders(case.leaders),
        worker_statefulsets={},
        now=NOW,
    )
    assert summary(plan.status["conditions"]) == case.want_conditions
    assert (plan.event.reason if plan.event else None) == case.want_event_reason
    degraded = [cond for cond in plan.status["conditions"] if cond["type"] == DEGRADED]
    for cond in degraded:
        if cond["status"] == c.CONDITION_TRUE:
            assert (cond["reason"], cond["message"]) == (
                c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
                c.MESSAGE_DEGRADED_TRUE,
            )
        else:
            assert (cond["reason"], cond["message"]) == (c.REASON_AS_EXPECTED, c.MESSAGE_DEGRADED_FALSE)


def test_degraded_cases_count() -> None:
    assert len(DEGRADED_CASES) == 7


@pytest.mark.parametrize(
    ("stored_available", "want"),
    [
        pytest.param(
            stored(AVAILABLE),
            (c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED, c.MESSAGE_AVAILABLE_FALSE_DEGRADED),
            id="Available still True at exhaustion: rewritten False with the budget's reason",
        ),
        pytest.param(
            stored(AVAILABLE, c.CONDITION_FALSE),
            (c.REASON_ALL_GROUPS_READY, c.MESSAGE_ALL_GROUPS_READY),
            id="Available already flipped False by Progressing: same status, left as it was",
        ),
    ],
)
def test_available_text_when_a_group_exhausts_its_budget(
    stored_available: dict[str, Any], want: tuple[str, str]
) -> None:
    """setCondition rewrites a condition only when its status or generation moves, so which text a
    False Available carries depends on whether a round saw the failing group down first."""
    lws = cached_lws("lws").replicas(2).size(1).status({"conditions": [stored_available]}).obj()
    plan = plan_status(
        lws,
        leader_sts("lws", replicas=2, status_replicas=2),
        revision_key="rev",
        leader_pods=_degraded_leaders([("rev", True, False), ("rev", False, True)]),
        worker_statefulsets={},
        now=NOW,
    )
    available = next(cond for cond in plan.status["conditions"] if cond["type"] == AVAILABLE)
    assert available["status"] == c.CONDITION_FALSE
    assert (available["reason"], available["message"]) == want


_T1 = datetime(2026, 1, 2, tzinfo=UTC)


def _cond(type_: str, status: str, reason: str, message: str, generation: int = 1) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": reason,
        "message": message,
    }


@dataclass(frozen=True)
class InvalidSpecCase:
    stored: tuple[dict[str, Any], ...]
    want_conditions: tuple[dict[str, Any], ...]
    want_changed: bool


_BAD = "spec.x: bad"
_NEW_BAD = {
    **_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, _BAD),
    "lastTransitionTime": "2026-01-02T00:00:00Z",
}
_AVAILABLE = _cond(
    c.CONDITION_AVAILABLE, c.CONDITION_TRUE, c.REASON_ALL_GROUPS_READY, c.MESSAGE_ALL_GROUPS_READY
)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            InvalidSpecCase((), (_NEW_BAD,), True),
            id="no conditions yet",
        ),
        pytest.param(
            InvalidSpecCase(
                (_AVAILABLE, _cond(c.CONDITION_PROGRESSING, c.CONDITION_TRUE, "GroupsProgressing", "m")),
                (
                    _AVAILABLE,
                    {
                        **_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, _BAD),
                        "lastTransitionTime": "2026-01-02T00:00:00Z",
                    },
                ),
                True,
            ),
            id="progressing flips, others kept",
        ),
        pytest.param(
            InvalidSpecCase(
                (_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, _BAD),),
                (_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, _BAD),),
                False,
            ),
            id="already reported: no write",
        ),
        pytest.param(
            InvalidSpecCase(
                (_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, "spec.y: old"),),
                (_cond(c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.REASON_INVALID_SPEC, _BAD),),
                True,
            ),
            id="new message, transition time kept",
        ),
    ],
)
def test_invalid_spec_conditions(case: InvalidSpecCase) -> None:
    conditions, changed = invalid_spec_conditions(list(case.stored), _BAD, 1, _T1)
    assert (conditions, changed) == (list(case.want_conditions), case.want_changed)
