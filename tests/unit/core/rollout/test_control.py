"""Rollout control, pure: the annotations, holding a rollout, the deadline arithmetic, our
conditions and their events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import GroupState
from leaderworkerset.core.observe.diagnosis import Diagnosis
from leaderworkerset.core.rollout import control as rc
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    RolloutDecision,
    plan_rollout,
)
from tests.support.builders import cached_lws, leader_pod

Obj = dict[str, Any]


PAUSED, DEADLINE = ext.ANNOTATION_ROLLOUT_PAUSED, ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE


NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class ParseCase:
    annotations: dict[str, str]
    want_paused: bool | None = None
    want_deadline: int | None = None
    want_errors: tuple[str, ...] = ()  # the keys reported
    hash_identity: bool = False


PARSE_CASES = [
    pytest.param(ParseCase({}), id="no annotation: nothing asked, not opted in"),
    pytest.param(ParseCase({PAUSED: "true"}, want_paused=True), id="paused"),
    pytest.param(ParseCase({PAUSED: "false"}, want_paused=False), id="explicitly not paused"),
    pytest.param(ParseCase({PAUSED: "yes"}, want_errors=(PAUSED,)), id="pause value not true/false"),
    pytest.param(ParseCase({PAUSED: "True"}, want_errors=(PAUSED,)), id="pause value is case sensitive"),
    pytest.param(ParseCase({DEADLINE: "600"}, want_deadline=600), id="deadline in seconds"),
    pytest.param(ParseCase({DEADLINE: "1"}, want_deadline=1), id="deadline lower bound"),
    pytest.param(ParseCase({DEADLINE: "31536000"}, want_deadline=31536000), id="deadline upper bound"),
    pytest.param(ParseCase({DEADLINE: "0"}, want_errors=(DEADLINE,)), id="deadline zero"),
    pytest.param(ParseCase({DEADLINE: "31536001"}, want_errors=(DEADLINE,)), id="deadline above a year"),
    pytest.param(ParseCase({DEADLINE: "10m"}, want_errors=(DEADLINE,)), id="deadline with a unit"),
    pytest.param(ParseCase({DEADLINE: "-5"}, want_errors=(DEADLINE,)), id="deadline negative"),
    pytest.param(
        ParseCase({PAUSED: "true", DEADLINE: "x"}, want_paused=True, want_errors=(DEADLINE,)),
        id="one bad value leaves the other feature on",
    ),
    pytest.param(
        ParseCase({PAUSED: "true", DEADLINE: "60"}, want_errors=(PAUSED, DEADLINE), hash_identity=True),
        id="Hash identity refuses both",
    ),
]


@pytest.mark.parametrize("case", PARSE_CASES)
def test_rollout_control_parses_the_annotations(case: ParseCase) -> None:
    builder = cached_lws("lws").annotations(case.annotations)
    if case.hash_identity:
        builder = builder.group_identity(c.GROUP_IDENTITY_HASH)
    control = rc.rollout_control(builder.obj())
    assert control.paused == case.want_paused
    assert control.deadline_seconds == case.want_deadline
    assert tuple(error.key for error in control.errors) == case.want_errors
    assert control.opted_in == bool(case.annotations)
    for error in control.errors:
        assert error.key in error.message
        assert error.rule in error.message


def test_parse_cases_count() -> None:
    assert len(PARSE_CASES) == 14


@dataclass(frozen=True)
class HoldCase:
    budget: RolloutBudget
    sts: LeaderStatefulSetView | None
    decision: RolloutDecision  # what the arithmetic wanted
    want_partition: int
    want_replicas: int
    revision_created: bool = False
    want_events: int = 0


def budget(replicas: int = 4, surge: int = 1, unavailable: int = 1, partition: int = 0) -> RolloutBudget:
    return RolloutBudget(replicas=replicas, surge=surge, unavailable=unavailable, user_partition=partition)


def view(replicas: int, partition: int, annotation: str | None = "4") -> LeaderStatefulSetView:
    return LeaderStatefulSetView(replicas=replicas, partition=partition, replicas_annotation=annotation)


HOLD_CASES = [
    pytest.param(
        HoldCase(budget(), view(5, 3), RolloutDecision(1, 5), want_partition=3, want_replicas=5),
        id="mid-rollout: the partition does not move down",
    ),
    pytest.param(
        HoldCase(budget(), view(5, 0), RolloutDecision(0, 4), want_partition=0, want_replicas=5),
        id="the surge group is not reclaimed while paused",
    ),
    pytest.param(
        HoldCase(budget(), view(4, 0), RolloutDecision(0, 4), want_partition=0, want_replicas=4),
        id="steady: holding changes nothing",
    ),
    pytest.param(
        HoldCase(
            budget(),
            view(4, 0),
            RolloutDecision(4, 5),
            want_partition=4,
            want_replicas=4,
            revision_created=True,
        ),
        id="new template: every group frozen, no surge made",
    ),
    pytest.param(
        HoldCase(budget(replicas=6), view(4, 0), RolloutDecision(0, 6), want_partition=0, want_replicas=6),
        id="scale-up goes on",
    ),
    pytest.param(
        HoldCase(
            budget(replicas=2, surge=1),
            view(5, 3),
            RolloutDecision(2, 3),
            want_partition=3,
            want_replicas=3,
            want_events=1,
        ),
        id="scale-down goes on; the surge is held, capped at the new surge",
    ),
    pytest.param(
        HoldCase(budget(partition=2), view(4, 1), RolloutDecision(2, 4), want_partition=2, want_replicas=4),
        id="never below the user's partition",
    ),
    pytest.param(
        HoldCase(budget(), None, RolloutDecision(0, 4), want_partition=0, want_replicas=4),
        id="no StatefulSet yet: creation is not held",
    ),
    pytest.param(
        HoldCase(budget(), view(5, 3, None), RolloutDecision(1, 5), want_partition=3, want_replicas=5),
        id="unreadable replicas annotation: taken as spec.replicas, the surge held",
    ),
]


@pytest.mark.parametrize("case", HOLD_CASES)
def test_held_decision_keeps_the_partition_and_surge(case: HoldCase) -> None:
    held = rc.held_decision(
        case.decision,
        lws_name="lws",
        sts=case.sts,
        budget=case.budget,
        revision_created=case.revision_created,
    )
    assert (held.partition, held.replicas) == (case.want_partition, case.want_replicas)
    assert len(held.events) == case.want_events


def test_hold_cases_count() -> None:
    assert len(HOLD_CASES) == 9


def test_a_paused_rollout_holds_across_reconciles_and_resumes_where_it_stopped() -> None:
    """Drive the real arithmetic: partition 3 of 4 (group 3 updated and ready), pause, and the
    partition stays 3 however often it runs; unpaused, the same state moves it on."""
    b = budget(replicas=4, surge=0, unavailable=1)
    pods = [leader_pod("lws", i, "new" if i == 3 else "old") for i in range(4)]
    sts = view(4, 3)
    for _ in range(3):
        wanted = plan_rollout(
            lws_name="lws",
            budget=b,
            size=1,
            sts=sts,
            revision_key="new",
            revision_created=False,
            leader_pods=pods,
        )
        held = rc.held_decision(wanted, lws_name="lws", sts=sts, budget=b, revision_created=False)
        assert wanted.partition == 2  # what an unpaused controller would do
        sts = view(held.replicas, held.partition)
        assert (sts.partition, sts.replicas) == (3, 4)


def _pod(revision: str, created: datetime, ready_at: datetime | None) -> Obj:
    pod = leader_pod("lws", 0, revision, ready=ready_at is not None)
    pod["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    if ready_at is not None:
        pod["status"]["conditions"][0]["lastTransitionTime"] = ready_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return pod


def _at(seconds: int) -> datetime:
    return NOW + timedelta(seconds=seconds)


@dataclass(frozen=True)
class ProgressCase:
    revision_created: int | None
    pods: tuple[tuple[str, int, int | None], ...]  # revision, created, ready at (seconds from NOW)
    want: int | None
    resumed: int | None = None
    step_started: int | None = None  # the deadline condition restamped (False) by a template change


PROGRESS_CASES = [
    pytest.param(ProgressCase(0, (), want=0), id="only the revision: its creation"),
    pytest.param(ProgressCase(0, (("new", 30, None),), want=30), id="a new pod created"),
    pytest.param(ProgressCase(0, (("new", 30, 50),), want=50), id="a new pod turned Ready"),
    pytest.param(ProgressCase(0, (("old", 90, 95),), want=0), id="old-revision pods are not progress"),
    pytest.param(ProgressCase(0, (("new", 30, None),), want=70, resumed=70), id="resumed later"),
    pytest.param(ProgressCase(None, (), want=None), id="nothing observed"),
    pytest.param(
        ProgressCase(0, (("new", 10, 20),), want=80, step_started=80),
        id="an undo back to an old revision with old pods: the step starts at the restamp",
    ),
]


@pytest.mark.parametrize("case", PROGRESS_CASES)
def test_last_progress_is_the_newest_observed_sign(case: ProgressCase) -> None:
    revision = None
    if case.revision_created is not None:
        revision = {
            "metadata": {"creationTimestamp": _at(case.revision_created).strftime("%Y-%m-%dT%H:%M:%SZ")}
        }
    pods = [
        _pod(rev, _at(created), None if ready is None else _at(ready)) for rev, created, ready in case.pods
    ]
    conditions = []
    if case.resumed is not None:
        conditions.append(
            {
                "type": ext.CONDITION_ROLLOUT_PAUSED,
                "status": "False",
                "lastTransitionTime": _at(case.resumed).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
    if case.step_started is not None:
        conditions.append(
            {
                "type": ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
                "status": "False",
                "lastTransitionTime": _at(case.step_started).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
    since = rc.last_progress(revision=revision, revision_key="new", pods=pods, conditions=conditions)
    assert since == (None if case.want is None else _at(case.want))


def test_a_template_change_restamps_the_deadline_condition_so_the_new_step_gets_its_full_deadline() -> None:
    stored = [
        {
            "type": ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for status, reason, message in (("False", ext.REASON_ROLLOUT_PROGRESSING, rc.PROGRESSING_MESSAGE),)
    ]
    control = rc.rollout_control(
        cached_lws("lws").annotations({ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "60"}).obj()
    )
    kept, kept_changed, _ = rc.rollout_conditions(
        stored, control, stall=None, generation=3, now=NOW, lws_name="lws", partition=0
    )
    assert not kept_changed
    assert kept[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    restamped, changed, events = rc.rollout_conditions(
        stored, control, stall=None, generation=3, now=NOW, lws_name="lws", partition=0, new_step=True
    )
    assert changed
    assert events == ()  # no transition to announce: the rollout simply starts a step
    assert restamped[0]["status"] == "False"
    assert restamped[0]["lastTransitionTime"] == NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert rc.last_progress(revision=None, revision_key="k", pods=[], conditions=restamped) == NOW


@dataclass(frozen=True)
class DeadlineCase:
    seconds: int | None
    elapsed: int
    want_exceeded: bool
    want_requeue: float | None
    under_way: bool = True
    waiting: tuple[int, ...] = (3,)


DEADLINE_CASES = [
    pytest.param(DeadlineCase(60, 0, False, 61.0), id="just progressed: wake a second after the deadline"),
    pytest.param(DeadlineCase(60, 45, False, 16.0), id="15 s left"),
    pytest.param(DeadlineCase(60, 60, True, None), id="exactly at the deadline"),
    pytest.param(DeadlineCase(60, 3600, True, None), id="long past"),
    pytest.param(DeadlineCase(None, 3600, False, None), id="no deadline asked"),
    pytest.param(DeadlineCase(60, 3600, False, None, under_way=False), id="no rollout under way"),
    pytest.param(DeadlineCase(60, 3600, False, None, waiting=()), id="no group waited on"),
]


@pytest.mark.parametrize("case", DEADLINE_CASES)
def test_deadline_arithmetic(case: DeadlineCase) -> None:
    check = rc.check_deadline(
        seconds=case.seconds, under_way=case.under_way, waiting=case.waiting, since=NOW, now=_at(case.elapsed)
    )
    assert check.exceeded == case.want_exceeded
    assert check.requeue_after == case.want_requeue


def test_deadline_cases_count() -> None:
    assert len(DEADLINE_CASES) == 7


def test_waiting_ordinals_are_the_not_ready_groups_at_or_above_the_user_partition() -> None:
    ready_old, ready_new = GroupState(True, False), GroupState(True, True)
    missing, crashing_new = GroupState(False, False), GroupState(False, True)
    states = [missing, ready_old, crashing_new, ready_new, missing]
    assert rc.waiting_ordinals(states, budget(partition=1)) == [2, 4]


STALL = rc.Stall(3, 2, 60, Diagnosis("FailedScheduling", "worker lws-3-1 unschedulable: 0/4 nodes"))


@dataclass(frozen=True)
class ConditionCase:
    annotations: dict[str, str]
    stored: tuple[tuple[str, str, str], ...]  # type, status, reason
    want: tuple[tuple[str, str, str], ...]
    want_events: tuple[str, ...]
    stall: rc.Stall | None = None


CONDITION_CASES = [
    pytest.param(ConditionCase({}, (), (), ()), id="not opted in: nothing"),
    pytest.param(
        ConditionCase({PAUSED: "true"}, (), (("RolloutPaused", "True", "Paused"),), ("RolloutPaused",)),
        id="pause",
    ),
    pytest.param(
        ConditionCase(
            {PAUSED: "true"},
            (("RolloutPaused", "True", "Paused"),),
            (("RolloutPaused", "True", "Paused"),),
            (),
        ),
        id="still paused: no rewrite, no event",
    ),
    pytest.param(
        ConditionCase(
            {PAUSED: "false"},
            (("RolloutPaused", "True", "Paused"),),
            (("RolloutPaused", "False", "Resumed"),),
            ("RolloutResumed",),
        ),
        id="resume",
    ),
    pytest.param(ConditionCase({PAUSED: "false"}, (), (), ()), id="false and never paused: no condition"),
    pytest.param(
        ConditionCase({}, (("RolloutPaused", "True", "Paused"),), (), ("RolloutResumed",)),
        id="annotation removed: our condition goes, resumed",
    ),
    pytest.param(
        ConditionCase(
            {DEADLINE: "60"},
            (),
            (("RolloutProgressDeadlineExceeded", "True", "FailedScheduling"),),
            ("RolloutProgressDeadlineExceeded",),
            stall=STALL,
        ),
        id="deadline exceeded: reason from the diagnosis",
    ),
    pytest.param(
        ConditionCase(
            {DEADLINE: "60"},
            (("RolloutProgressDeadlineExceeded", "True", "FailedScheduling"),),
            (("RolloutProgressDeadlineExceeded", "False", "Progressing"),),
            ("RolloutProgressing",),
        ),
        id="progress again",
    ),
    pytest.param(
        ConditionCase(
            {PAUSED: "true", DEADLINE: "60"},
            (("RolloutProgressDeadlineExceeded", "True", "FailedScheduling"),),
            (
                ("RolloutProgressDeadlineExceeded", "True", "FailedScheduling"),
                ("RolloutPaused", "True", "Paused"),
            ),
            ("RolloutPaused",),
        ),
        id="pausing leaves the deadline condition as it was",
    ),
    pytest.param(
        ConditionCase(
            {PAUSED: "maybe"},
            (),
            (("RolloutAnnotationInvalid", "True", "InvalidAnnotation"),),
            ("RolloutAnnotationInvalid",),
        ),
        id="bad value with webhooks off: condition and event",
    ),
    pytest.param(
        ConditionCase(
            {PAUSED: "true"},
            (("RolloutAnnotationInvalid", "True", "InvalidAnnotation"),),
            (("RolloutAnnotationInvalid", "False", "AnnotationsValid"), ("RolloutPaused", "True", "Paused")),
            ("RolloutPaused",),
        ),
        id="bad value fixed",
    ),
]


@pytest.mark.parametrize("case", CONDITION_CASES)
def test_rollout_conditions_and_events(case: ConditionCase) -> None:
    upstream = {"type": c.CONDITION_AVAILABLE, "status": "True", "reason": "AllGroupsReady", "message": "m"}
    # Stored as the controller writes them, so an unchanged condition is not rewritten.
    messages = {(ext.CONDITION_ROLLOUT_PAUSED, "True"): rc.PAUSED_MESSAGE}
    stored = [upstream] + [
        {
            "type": t,
            "status": s,
            "reason": r,
            "message": messages.get((t, s), "old"),
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        for t, s, r in case.stored
    ]
    control = rc.rollout_control(cached_lws("lws").annotations(case.annotations).obj())
    conditions, changed, events = rc.rollout_conditions(
        stored, control, stall=case.stall, generation=2, now=NOW, lws_name="lws", partition=3
    )
    assert conditions[0] == upstream  # upstream's conditions are never touched
    assert tuple((d["type"], d["status"], d["reason"]) for d in conditions[1:]) == case.want
    assert tuple(e.reason for e in events) == case.want_events
    assert changed == (tuple((t, s, r) for t, s, r in case.stored) != case.want or bool(events))


def test_condition_cases_count() -> None:
    assert len(CONDITION_CASES) == 11


def test_the_stall_message_names_the_group_and_the_diagnosis() -> None:
    assert STALL.reason == "FailedScheduling"
    assert STALL.message == (
        "no progress for 60s, rollout halted with 2 group(s) not ready; "
        "group 3: worker lws-3-1 unschedulable: 0/4 nodes"
    )
