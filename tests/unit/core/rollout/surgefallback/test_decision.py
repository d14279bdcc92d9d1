"""Capacity-aware surge, pure (core/rollout/surgefallback/decision.py): when to give the surge back, when to
surge again, the steps without surge, and what the condition and events say."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import MISSING_GROUP, GroupState
from leaderworkerset.core.objects import ORDINAL_ONLY_RULE
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    RolloutDecision,
    plan_rollout,
)
from leaderworkerset.core.rollout.surgefallback import decision as sf
from tests.support.builders import cached_lws, leader_pod, leader_sts, pod

Obj = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
R3_SURGE1 = RolloutBudget(replicas=3, surge=1, unavailable=0, user_partition=0)
OLD, NEW, PENDING = GroupState(True, False), GroupState(True, True), MISSING_GROUP
UPDATING = GroupState(False, True)
FITS = sf.SurgeCapacity(True, {"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 8})
FULL = sf.SurgeCapacity(False, {"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 0})


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def blocked(ordinal: int, seconds: float) -> sf.Unschedulable:
    return sf.Unschedulable(ordinal, ago(seconds), "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


@dataclass(frozen=True)
class Case:
    id: str
    inputs: sf.SurgeInputs
    want_fallback: bool
    want_transition: sf.Transition | None = None
    want_since: datetime | None = None
    want_requeue: float | None = None
    want_capacity_read: bool = False


# The scenario: 3 groups, maxSurge 1, maxUnavailable 0, the surge group 3 Pending.
SURGING = sf.SurgeInputs(
    seconds=5,
    since=None,
    budget=R3_SURGE1,
    sts=LeaderStatefulSetView(replicas=4, partition=3, replicas_annotation="3"),
    under_way=True,
    states=(OLD, OLD, OLD, PENDING),
)
FALLEN_BACK = replace(
    SURGING,
    since=ago(10),
    sts=LeaderStatefulSetView(replicas=3, partition=2, replicas_annotation="3"),
    states=(OLD, OLD, NEW),
)

DECIDE_CASES = [
    Case(
        "no annotation: upstream's surge",
        replace(SURGING, seconds=None, unschedulable=[blocked(3, 600)]),
        False,
    ),
    Case("surge group schedules: surge", SURGING, False),
    Case(
        "unschedulable, not yet long enough: look again when it would be",
        replace(SURGING, unschedulable=[blocked(3, 2)]),
        False,
        want_requeue=4.0,
    ),
    Case(
        "unschedulable for the whole period: fall back now",
        replace(SURGING, unschedulable=[blocked(3, 5)]),
        True,
        sf.Transition.FALLBACK,
        want_since=NOW,
        want_requeue=5.0,
    ),
    Case(
        "an unschedulable pod of a group below replicas is not the surge's",
        replace(SURGING, unschedulable=[blocked(2, 600)]),
        False,
    ),
    Case(
        "no surge configured: nothing to give back",
        replace(SURGING, budget=replace(R3_SURGE1, surge=0, unavailable=1), unschedulable=[blocked(3, 600)]),
        False,
    ),
    Case("no rollout under way: nothing to give back", replace(SURGING, under_way=False), False),
    Case(
        "fallen back, within the period: stay, look again after it",
        replace(FALLEN_BACK, since=ago(2)),
        True,
        want_since=ago(2),
        want_requeue=4.0,
    ),
    Case(
        "fallen back, a group is being replaced: stay, its readiness brings the next round",
        replace(FALLEN_BACK, states=(OLD, OLD, UPDATING), capacity=FITS),
        True,
        want_since=ago(10),
    ),
    Case(
        "fallen back, quiet, no capacity: stay and poll",
        replace(FALLEN_BACK, capacity=FULL),
        True,
        want_since=ago(10),
        want_requeue=5.0,
        want_capacity_read=True,
    ),
    Case(
        "fallen back, capacity unknown: stay and poll",
        FALLEN_BACK,
        True,
        want_since=ago(10),
        want_requeue=5.0,
        want_capacity_read=True,
    ),
    Case(
        "fallen back, quiet, a surge group fits: surge again",
        replace(FALLEN_BACK, capacity=FITS),
        False,
        sf.Transition.RESUMED,
        want_capacity_read=True,
    ),
    Case(
        "fallen back, the rollout ended: the state goes",
        replace(FALLEN_BACK, under_way=False),
        False,
        sf.Transition.ENDED,
    ),
    Case(
        "fallen back, the annotation was removed: the state goes",
        replace(FALLEN_BACK, seconds=None),
        False,
        sf.Transition.OFF,
    ),
    Case(
        "long poll periods are capped",
        replace(FALLEN_BACK, seconds=600, since=ago(3600), capacity=FULL),
        True,
        want_since=ago(3600),
        want_requeue=60.0,
        want_capacity_read=True,
    ),
]


@pytest.mark.parametrize("case", DECIDE_CASES, ids=[case.id for case in DECIDE_CASES])
def test_surge_or_fall_back(case: Case) -> None:
    mode = sf.decide_surge(case.inputs, NOW)
    assert (mode.fallback, mode.transition, mode.since) == (
        case.want_fallback,
        case.want_transition,
        case.want_since,
    )
    assert mode.requeue_after == case.want_requeue
    assert sf.wants_capacity(case.inputs, NOW) == case.want_capacity_read


def test_every_decide_case_ran() -> None:
    assert len(DECIDE_CASES) == 15


# --- the steps without surge --------------------------------------------------------------------------


def _plan(states: list[GroupState]) -> sf.PlanFn:
    """Upstream's step (`plan_rollout`) over leader pods in these states (groups of one pod)."""
    pods = [
        leader_pod("lws", o, "new" if state.updated else "old", ready=state.ready)
        for o, state in enumerate(states)
        if state != PENDING
    ]

    def plan(budget: RolloutBudget, sts: LeaderStatefulSetView) -> RolloutDecision:
        return plan_rollout(
            lws_name="lws",
            budget=budget,
            size=1,
            sts=sts,
            revision_key="new",
            revision_created=False,
            leader_pods=pods,
            statefulsets=[leader_sts("lws", replicas=sts.replicas)],
        )

    return plan


@pytest.mark.parametrize(
    ("budget", "sts", "states", "want"),
    [
        pytest.param(
            R3_SURGE1,
            LeaderStatefulSetView(4, 3, "3"),
            [OLD, OLD, OLD, PENDING],
            (2, 3, ["deleting surge replica lws-3"]),
            id="the surge goes and one group is released at once",
        ),
        pytest.param(
            R3_SURGE1,
            LeaderStatefulSetView(3, 2, "3"),
            [OLD, OLD, UPDATING],
            (2, 3, []),
            id="the released group is not ready: hold",
        ),
        pytest.param(
            R3_SURGE1,
            LeaderStatefulSetView(3, 2, "3"),
            [OLD, OLD, NEW],
            (1, 3, []),
            id="ready: the next one",
        ),
        pytest.param(
            replace(R3_SURGE1, replicas=6, surge=2, unavailable=2),
            LeaderStatefulSetView(8, 6, "6"),
            [OLD] * 6 + [PENDING, PENDING],
            (4, 6, ["deleting surge replicas from lws-6 to lws-7"]),
            id="maxUnavailable 2: two at a time",
        ),
        pytest.param(
            replace(R3_SURGE1, user_partition=1),
            LeaderStatefulSetView(3, 1, "3"),
            [OLD, NEW, NEW],
            (1, 3, []),
            id="the user's partition stays a floor",
        ),
    ],
)
def test_steps_without_surge(
    budget: RolloutBudget,
    sts: LeaderStatefulSetView,
    states: list[GroupState],
    want: tuple[int, int, list[str]],
) -> None:
    decision = sf.fallback_decision(_plan(states), lws_name="lws", budget=budget, sts=sts)
    assert (decision.partition, decision.replicas) == want[:2]
    assert [event.message for event in decision.events] == want[2]


@pytest.mark.parametrize(("replicas", "unavailable", "want_down"), [(3, 0, 1), (5, 0, 1), (6, 2, 2)])
def test_the_rollout_without_surge_replaces_max_unavailable_or_one_at_a_time(
    replicas: int, unavailable: int, want_down: int
) -> None:
    """The issue's scenario as a whole: from the stalled surge to every group updated, playing the
    StatefulSet controller (which recreates released groups) and the groups getting Ready."""
    budget = RolloutBudget(replicas=replicas, surge=1, unavailable=unavailable, user_partition=0)
    states = [OLD] * replicas + [PENDING]
    sts = LeaderStatefulSetView(replicas + 1, replicas, str(replicas))
    most_down = 0
    for _ in range(2 * replicas + 2):
        decision = sf.fallback_decision(_plan(states), lws_name="lws", budget=budget, sts=sts)
        states = states[: decision.replicas]
        for o in range(decision.partition, decision.replicas):
            if not states[o].updated:
                states[o] = UPDATING  # recreated on the new template
        most_down = max(most_down, sum(1 for state in states if not state.ready))
        states = [NEW if state == UPDATING else state for state in states]  # Ready before the next round
        sts = LeaderStatefulSetView(decision.replicas, decision.partition, str(replicas))
    assert states == [NEW] * replicas
    assert (sts.partition, sts.replicas) == (0, replicas)
    assert most_down == want_down


# --- reading the pods ----------------------------------------------------------------------------------


def _pod(group: str, *conditions: tuple[str, str, str, str]) -> Obj:
    builder = pod(f"p-{group}").lws_name("s").group_index(group)
    for kind, status, reason, at in conditions:
        builder.condition(kind, status, reason=reason, message="no GPUs", at=at)
    return builder.obj()


def test_unschedulable_groups_at_or_above_replicas() -> None:
    pods = [
        _pod("3", ("PodScheduled", "False", "Unschedulable", "2026-12-01T11:59:00Z")),
        _pod("3", ("PodScheduled", "False", "Unschedulable", "2026-12-01T11:58:00Z")),
        _pod("4", ("PodScheduled", "False", "SchedulingGated", "2026-12-01T11:00:00Z")),
        _pod("5", ("PodScheduled", "True", "", "2026-12-01T11:00:00Z")),
        _pod("2", ("PodScheduled", "False", "Unschedulable", "2026-12-01T11:00:00Z")),
        _pod("6"),
    ]
    got = sf.unschedulable_groups(pods, 3)
    assert got == [sf.Unschedulable(3, datetime(2026, 12, 1, 11, 58, tzinfo=UTC), "no GPUs")]


# --- the annotation ----------------------------------------------------------------------------------

SECONDS_CASES = [
    ("5", None, None),
    ("86400", None, None),
    ("0", sf.SECONDS_RULE, None),
    ("86401", sf.SECONDS_RULE, None),
    ("-3", sf.SECONDS_RULE, None),
    ("5s", sf.SECONDS_RULE, None),
    ("", sf.SECONDS_RULE, None),
    ("5", ORDINAL_ONLY_RULE, c.GROUP_IDENTITY_HASH),
]


@pytest.mark.parametrize(("value", "want", "identity"), SECONDS_CASES)
def test_the_annotation_is_a_positive_whole_number_of_seconds(
    value: str, want: str | None, identity: str | None
) -> None:
    lws = (
        cached_lws()
        .group_identity(identity)
        .annotations({ext.ANNOTATION_SURGE_FALLBACK_SECONDS: value})
        .obj()
    )
    assert sf.seconds_problem(value, lws) == want
    assert sf.fallback_seconds(lws) == (None if want else int(value))


def test_every_seconds_case_ran() -> None:
    assert len(SECONDS_CASES) == 8


# --- condition and events ----------------------------------------------------------------------------

FALLBACK_MODE = sf.SurgeMode(True, NOW, sf.Transition.FALLBACK, "surge group 3 unschedulable for 5s")
TRUE_CONDITION = {"type": ext.CONDITION_SURGE_FALLBACK, "status": "True", "reason": "SurgeUnschedulable"}
UPSTREAM = {"type": "Available", "status": "True"}


@pytest.mark.parametrize(
    ("stored", "mode", "want_status", "want_reason", "want_events"),
    [
        pytest.param([UPSTREAM], sf.SURGE, None, None, [], id="never fell back: nothing written"),
        pytest.param(
            [UPSTREAM], FALLBACK_MODE, "True", "SurgeUnschedulable", ["SurgeFallback"], id="fallback"
        ),
        pytest.param(
            [UPSTREAM, TRUE_CONDITION],
            sf.SurgeMode(True, NOW),
            None,
            None,
            [],
            id="still fallen back: nothing written",
        ),
        pytest.param(
            [UPSTREAM, TRUE_CONDITION],
            sf.SurgeMode(transition=sf.Transition.RESUMED, message="free"),
            "False",
            "SurgeResumed",
            ["SurgeResumed"],
            id="resumed",
        ),
        pytest.param(
            [UPSTREAM, TRUE_CONDITION],
            sf.SurgeMode(transition=sf.Transition.ENDED, message="complete"),
            "False",
            "RolloutComplete",
            [],
            id="the rollout ended without surge",
        ),
        pytest.param(
            [UPSTREAM, TRUE_CONDITION],
            sf.SurgeMode(transition=sf.Transition.OFF),
            "absent",
            None,
            [],
            id="annotation removed: condition removed",
        ),
    ],
)
def test_condition_and_events(
    stored: list[Obj],
    mode: sf.SurgeMode,
    want_status: str | None,
    want_reason: str | None,
    want_events: list[str],
) -> None:
    result = sf.surge_conditions(stored, mode, generation=2, now=NOW, lws_name="lws")
    if want_status is None:
        assert result is None
        return
    assert result is not None
    conditions, events = result
    assert UPSTREAM in conditions  # upstream's conditions are left alone
    ours = [cond for cond in conditions if cond["type"] == ext.CONDITION_SURGE_FALLBACK]
    if want_status == "absent":
        assert ours == []
    else:
        assert (ours[0]["status"], ours[0]["reason"]) == (want_status, want_reason)
    assert [event.reason for event in events] == want_events
