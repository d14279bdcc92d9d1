"""Opt-in GroupNotReady events: when a group's problem is said, when nothing is, and the annotation."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import AnnotationError, invalid_annotation_conditions
from leaderworkerset.core.objects import ControllerEvent
from leaderworkerset.core.observe import diagnosis as d
from leaderworkerset.core.observe import notready
from leaderworkerset.core.setannotations import RULES, annotation_errors, invalid_event, invalid_message
from tests.support.builders import cached_lws, leader_pod

Obj = dict[str, Any]
LEADER = leader_pod("lws", 0, "rev")
CRASH = d.Diagnosis(
    d.CAUSE_CRASH_LOOP, "worker lws-0-1 container main CrashLoopBackOff (exit code 1, 3 restarts)"
)
CRASH_LATER = d.Diagnosis(
    d.CAUSE_CRASH_LOOP, "worker lws-0-1 container main CrashLoopBackOff (exit code 1, 4 restarts)"
)
UNSCHEDULABLE = d.Diagnosis(
    d.CAUSE_FAILED_SCHEDULING, "worker lws-0-1 unschedulable: 0/4 nodes are available"
)
STARTING = d.Diagnosis(d.CAUSE_NOT_READY, "leader pod not ready")


@dataclass(frozen=True)
class Step:
    said: d.Diagnosis | None
    now: d.Diagnosis | None
    remember: d.Diagnosis | None
    event: tuple[str, str, str] | None  # (type, reason, message)


NEXT_REPORT = [
    pytest.param(Step(None, None, None, None), id="ready-and-nothing-said"),
    pytest.param(Step(None, STARTING, None, None), id="a-normal-start-says-nothing"),
    pytest.param(
        Step(
            None, CRASH, CRASH, ("Warning", ext.EVENT_GROUP_NOT_READY, f"group 0 not ready: {CRASH.message}")
        ),
        id="a-problem-is-said",
    ),
    pytest.param(Step(CRASH, CRASH, CRASH, None), id="the-same-line-is-said-once"),
    pytest.param(
        Step(
            CRASH,
            CRASH_LATER,
            CRASH_LATER,
            ("Warning", ext.EVENT_GROUP_NOT_READY, f"group 0 not ready: {CRASH_LATER.message}"),
        ),
        id="a-changed-line-is-said-again",
    ),
    pytest.param(
        Step(
            CRASH,
            UNSCHEDULABLE,
            UNSCHEDULABLE,
            ("Warning", ext.EVENT_GROUP_NOT_READY, f"group 0 not ready: {UNSCHEDULABLE.message}"),
        ),
        id="another-problem-is-said",
    ),
    pytest.param(Step(CRASH, STARTING, CRASH, None), id="a-problem-in-between-steps-is-remembered"),
    pytest.param(
        Step(
            CRASH,
            None,
            None,
            ("Normal", ext.EVENT_GROUP_READY, f"group 0 is ready (it was: {CRASH.message})"),
        ),
        id="ready-again-after-a-problem",
    ),
]


@pytest.mark.parametrize("step", NEXT_REPORT)
def test_next_report(step: Step) -> None:
    remember, event = notready.next_report("0", step.said, step.now, LEADER)
    assert remember == step.remember
    if step.event is None:
        assert event is None
        return
    assert event is not None
    assert (event.type, event.reason, event.message) == step.event
    assert event.related == ("Pod", "lws-0")


def test_next_report_cases_run() -> None:
    assert len(NEXT_REPORT) == 8


def test_every_cause_is_either_reported_or_a_step_of_a_normal_start() -> None:
    """A new diagnosis cause must be classified here: reported, or not."""
    causes = {value for name, value in vars(d).items() if name.startswith("CAUSE_")}
    steps = {
        d.CAUSE_LEADER_MISSING,
        d.CAUSE_LEADER_TERMINATING,
        d.CAUSE_REPLACEMENT_GATE,
        d.CAUSE_GANG_WAIT,
        d.CAUSE_WAIT_LEADER_READY,
        d.CAUSE_WAIT_LEADER_SCHEDULED,
        d.CAUSE_WORKERS_MISSING,
        d.CAUSE_UNSCHEDULED,
        d.CAUSE_NOT_READY,
    }
    assert notready.REPORTED_CAUSES | steps == causes
    assert not notready.REPORTED_CAUSES & steps
    assert len(causes) == 20


ROW = next(rule for rule in RULES if rule.key == ext.ANNOTATION_NOT_READY_EVENTS)


def not_ready_events_error(lws: Obj) -> AnnotationError | None:
    """The annotation's error, as the set-annotation table finds it with the row's rule."""
    return next((error for rule, error in annotation_errors(lws, c.LWS_KIND) if rule is ROW), None)


def not_ready_events_message(error: AnnotationError) -> str:
    return invalid_message(ROW, error)


def not_ready_events_event(error: AnnotationError) -> ControllerEvent:
    return invalid_event(ROW, error)


def _annotated(value: str | None) -> Obj:
    lws = cached_lws("lws").obj()
    if value is not None:
        lws["metadata"]["annotations"] = {ext.ANNOTATION_NOT_READY_EVENTS: value}
    return lws


@pytest.mark.parametrize(
    ("value", "wants", "error"),
    [
        (None, False, None),
        ("true", True, None),
        ("false", False, None),
        (
            "True",
            False,
            'annotation leaderworkerset.dev/not-ready-events: \'True\' is invalid: must be "true" or "false"',
        ),
        (
            "",
            False,
            'annotation leaderworkerset.dev/not-ready-events: \'\' is invalid: must be "true" or "false"',
        ),
    ],
)
def test_the_annotation(value: str | None, wants: bool, error: str | None) -> None:
    lws = _annotated(value)
    assert notready.wants_not_ready_events(lws) is wants
    found = not_ready_events_error(lws)
    assert (found.message if found else None) == error


def test_an_unusable_value_is_flagged_in_a_condition_and_cleared_once_fixed() -> None:
    bad = _annotated("yes")
    error = not_ready_events_error(bad)
    assert error is not None
    message = not_ready_events_message(error)
    assert message.endswith("; no GroupNotReady events are recorded")
    conditions = invalid_annotation_conditions(bad, ext.CONDITION_NOT_READY_EVENTS_INVALID, message, "now")
    assert conditions is not None
    [condition] = conditions
    assert condition["type"] == ext.CONDITION_NOT_READY_EVENTS_INVALID
    assert (condition["status"], condition["reason"], condition["message"]) == (
        c.CONDITION_TRUE,
        ext.REASON_INVALID_ANNOTATION,
        message,
    )
    flagged = copy.deepcopy(bad)
    flagged["status"] = {"conditions": conditions}
    assert (
        invalid_annotation_conditions(flagged, ext.CONDITION_NOT_READY_EVENTS_INVALID, message, "later")
        is None
    )
    assert invalid_annotation_conditions(flagged, ext.CONDITION_NOT_READY_EVENTS_INVALID, None, "later") == []
    assert (
        invalid_annotation_conditions(_annotated(None), ext.CONDITION_NOT_READY_EVENTS_INVALID, None, "now")
        is None
    )
    event = not_ready_events_event(error)
    assert (event.type, event.reason, event.message) == (
        "Warning",
        ext.EVENT_INVALID_NOT_READY_EVENTS,
        message,
    )


def _pod(name: str, worker_index: str, *, created: str, deleting: bool = False) -> Obj:
    pod = copy.deepcopy(LEADER)
    pod["metadata"].update(name=name, creationTimestamp=created)
    pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] = worker_index
    if deleting:
        pod["metadata"]["deletionTimestamp"] = created
    return pod


def test_members_to_diagnose_pick_the_live_newest_leader() -> None:
    old = _pod("old", "0", created="2026-01-01T00:00:00Z", deleting=True)
    live = _pod("live", "0", created="2026-01-01T00:01:00Z")
    newer = _pod("newer", "0", created="2026-01-01T00:02:00Z")
    worker = _pod("w", "1", created="2026-01-01T00:00:30Z")
    assert notready.members_to_diagnose([old, live, worker]).leader is live
    assert notready.members_to_diagnose([old, live, newer, worker]).leader is newer
    assert notready.members_to_diagnose([old, worker]).leader is old  # only a departing one
    assert notready.members_to_diagnose([worker]).leader is None
    assert list(notready.members_to_diagnose([old, worker]).pods) == [old, worker]
