"""The LWS status one reconcile round writes, built from the contributions of its steps.

Several steps of a round have something to say in the status: the annotation checks, the
scheduling prerequisites, the counts and conditions, rollout control, a spec the controller cannot
use. Each returns the status it wants on top of what the steps before it left (or None: nothing to
change); the controller keeps the result and writes it once, at the end of the round, with one
conflict policy (as jobset's `updateJobSetStatus`). Two writes per round would each need their own
resourceVersion and their own answer to a conflict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core import setannotations
from leaderworkerset.core.conditions import (
    format_time,
    invalid_annotation_conditions,
    invalid_spec_conditions,
)
from leaderworkerset.core.lifecycle import backoffsource, inplacerestart
from leaderworkerset.core.objects import ControllerEvent, Obj
from leaderworkerset.core.quarantine.taint import refusal_message
from leaderworkerset.core.rollout.control import OUR_CONDITIONS, RolloutControl, Stall, rollout_conditions
from leaderworkerset.core.rollout.surgefallback.decision import SurgeMode, surge_conditions

Status = dict[str, Any]
NO_MISSING_PREREQUISITES = inplacerestart.Prerequisites()


def status_of(lws: Obj) -> Status:
    return dict(lws.get("status") or {})


def generation_of(lws: Obj) -> int:
    return int((lws.get("metadata") or {}).get("generation") or 0)


def write_body(lws: Obj) -> dict[str, Any]:
    """The status PUT of `lws` (its resourceVersion guards it: a stale read conflicts instead of
    going backwards). List items of some kinds come without apiVersion and kind."""
    return {**lws, "apiVersion": c.LWS_API_VERSION, "kind": c.LWS_KIND}


def annotation_status(
    lws: Obj, now: datetime, restart: inplacerestart.Prerequisites = NO_MISSING_PREREQUISITES
) -> tuple[Status, list[ControllerEvent]] | None:
    """Each of our annotations whose value cannot be used (the set-annotation table's rows: not-ready
    events, surge fallback, disruption budget, node quarantine, update and
    restart strategies) or cannot be honoured (node quarantine's taints where nodes may not be
    patched, an in-place restart strategy without its `restart` prerequisites), and the restart
    back-off in force (annotation or typed field) when unusable or overriding, flagged, or cleared,
    in a condition of our own, with the events of the new flags; None when nothing changes (always,
    for an LWS without such a value now or before)."""
    checks = [*setannotations.flag_checks(lws, c.LWS_KIND), _taint_refusal(lws)]
    reasons = {ext.CONDITION_QUARANTINE_TAINT_REFUSED: ext.REASON_NODE_PATCH_FORBIDDEN}
    for condition_type, message, event, reason in backoffsource.condition_checks(lws):
        checks.append((condition_type, message, event))
        reasons[condition_type] = reason
    unavailable = inplacerestart.unavailable(lws, restart)
    if unavailable is None:
        checks.append((ext.CONDITION_IN_PLACE_RESTART_UNAVAILABLE, None, None))
    else:
        reason, message = unavailable
        event = ControllerEvent(
            c.EVENT_TYPE_WARNING, ext.EVENT_IN_PLACE_RESTART_UNAVAILABLE, c.EVENT_ACTION_RECONCILE, message
        )
        checks.append((ext.CONDITION_IN_PLACE_RESTART_UNAVAILABLE, message, event))
        reasons[ext.CONDITION_IN_PLACE_RESTART_UNAVAILABLE] = reason
    return _flagged(lws, checks, format_time(now), reasons)


def _taint_refusal(lws: Obj) -> tuple[str, str | None, ControllerEvent | None]:
    """Node quarantine's taint mode where the manager may not patch nodes (recorded in the state)."""
    message = refusal_message(lws)
    event = (
        None
        if message is None
        else ControllerEvent(
            c.EVENT_TYPE_WARNING, ext.EVENT_QUARANTINE_TAINT_REFUSED, c.EVENT_ACTION_RECONCILE, message
        )
    )
    return ext.CONDITION_QUARANTINE_TAINT_REFUSED, message, event


def ds_annotation_status(ds: Obj, now: datetime) -> tuple[Status, list[ControllerEvent]] | None:
    """`annotation_status` for a DisaggregatedSet: the rows of the set-annotation table for its kind."""
    return _flagged(ds, setannotations.flag_checks(ds, c.DS_KIND), format_time(now))


def _flagged(
    obj: Obj,
    checks: Sequence[tuple[str, str | None, ControllerEvent | None]],
    stamp: str,
    reasons: Mapping[str, str] | None = None,
) -> tuple[Status, list[ControllerEvent]] | None:
    """`reasons`: a condition's reason when it is not InvalidAnnotation."""
    current: Obj = obj
    events: list[ControllerEvent] = []
    changed = False
    for condition_type, message, event in checks:
        reason = (reasons or {}).get(condition_type, ext.REASON_INVALID_ANNOTATION)
        conditions = invalid_annotation_conditions(current, condition_type, message, stamp, reason)
        if conditions is None:
            continue
        changed = True
        current = {**current, "status": {**status_of(current), "conditions": conditions}}
        if event is not None:
            events.append(event)
    if not changed:
        return None
    status = status_of(current)
    if not status.get("conditions"):
        status.pop("conditions", None)
    return status, events


def invalid_spec_status(lws: Obj, problem: str, now: datetime) -> Status | None:
    """Progressing=False (InvalidSpec) for an LWS the controller cannot act on as written; None
    when it already says so."""
    status = status_of(lws)
    conditions, changed = invalid_spec_conditions(
        status.get("conditions") or [], problem, generation_of(lws), now
    )
    return {**status, "conditions": conditions} if changed else None


def rollout_control_status(
    lws: Obj,
    status: Status,
    control: RolloutControl,
    *,
    stall: Stall | None,
    now: datetime,
    partition: int,
    new_step: bool,
) -> tuple[Status, bool, tuple[ControllerEvent, ...]]:
    """`status` with our rollout-control conditions merged in (only for a set that opts in or
    still carries them), whether that changed it, and the events of the transitions."""
    stored = status.get("conditions") or []
    if not control.opted_in and not any(cond.get("type") in OUR_CONDITIONS for cond in stored):
        return status, False, ()
    conditions, changed, events = rollout_conditions(
        stored,
        control,
        stall=stall,
        generation=generation_of(lws),
        now=now,
        lws_name=str((lws.get("metadata") or {}).get("name") or ""),
        partition=partition,
        new_step=new_step,
    )
    if not changed:
        return status, False, ()
    if conditions:
        return {**status, "conditions": conditions}, True, events
    return {k: v for k, v in status.items() if k != "conditions"}, True, events


def surge_fallback_status(
    lws: Obj, status: Status, mode: SurgeMode, now: datetime
) -> tuple[Status, bool, tuple[ControllerEvent, ...]]:
    """`status` with our SurgeFallback condition as `mode` has it, whether that changed it, and
    the events of the transition (a set that never gave its surge back is never written here)."""
    result = surge_conditions(
        status.get("conditions") or [],
        mode,
        generation=generation_of(lws),
        now=now,
        lws_name=str((lws.get("metadata") or {}).get("name") or ""),
    )
    if result is None:
        return status, False, ()
    conditions, events = result
    if conditions:
        return {**status, "conditions": conditions}, True, events
    return {k: v for k, v in status.items() if k != "conditions"}, True, events
