"""Rollout control of an Ordinal LWS: pause, progress deadline (docs/rollout-control.md).

Both are opt-in through annotations of our own domain (`api/extensions.py`). They never compute a
step of their own: the controller first decides `(partition, replicas)` exactly as upstream does
(`core.rollout.partition.plan_rollout`), then, while paused or past the deadline, `held_decision`
keeps what the leader StatefulSet already has. Holding is Deployment-like: nothing more is released for
update and the surge neither grows nor shrinks, but a new template is still frozen behind the
partition (otherwise partition 0 would let the StatefulSet controller replace every group at
once), and a change of `spec.replicas` is still applied.

Progress is read from observed state only, so a restarted controller knows as much as the one
before it: the newest of the current revision's creation, the creation of a pod on the current
revision, a pod of it turning Ready, and the moment the rollout was last resumed. No timer is
kept; the controller asks to be reconciled again when the deadline would fall.

"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import AnnotationError, Condition, format_time, parse_time
from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi
from leaderworkerset.core.groups.state import GroupState, ready_since
from leaderworkerset.core.objects import (
    ORDINAL_ONLY_RULE,
    ControllerEvent,
    Obj,
    annotations_of,
    is_hash,
    labels_of,
    metadata,
)
from leaderworkerset.core.observe.diagnosis import Diagnosis
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    RolloutDecision,
    surge_reclaim_events,
)

MAX_PROGRESS_DEADLINE_SECONDS = 365 * 24 * 3600


OUR_CONDITIONS = (
    ext.CONDITION_ROLLOUT_PAUSED,
    ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
    ext.CONDITION_ROLLOUT_ANNOTATION_INVALID,
)


@dataclass(frozen=True)
class RolloutControl:
    """What the annotations ask for; an invalid value switches its feature off and is reported."""

    paused: bool | None = None  # None: annotation absent (or invalid)
    deadline_seconds: int | None = None
    errors: tuple[AnnotationError, ...] = ()

    @property
    def opted_in(self) -> bool:
        return self.paused is not None or self.deadline_seconds is not None or bool(self.errors)


NO_ROLLOUT_CONTROL = RolloutControl()


def _parse_paused(value: str) -> tuple[bool | None, str | None]:
    if value == ext.ROLLOUT_PAUSED_TRUE:
        return True, None
    if value == ext.ROLLOUT_PAUSED_FALSE:
        return False, None
    return None, f'must be "{ext.ROLLOUT_PAUSED_TRUE}" or "{ext.ROLLOUT_PAUSED_FALSE}"'


def _parse_deadline(value: str) -> tuple[int | None, str | None]:
    rule = f"must be a whole number of seconds from 1 to {MAX_PROGRESS_DEADLINE_SECONDS}"
    try:
        seconds = go_atoi(value)
    except GoParseError:
        return None, rule
    if not 1 <= seconds <= MAX_PROGRESS_DEADLINE_SECONDS:
        return None, rule
    return seconds, None


def paused_problem(value: str, lws: Obj) -> str | None:
    """The rule a `rollout-paused` value breaks on `lws`, or None (the set-annotation table's check)."""
    return ORDINAL_ONLY_RULE if is_hash(lws) else _parse_paused(value)[1]


def deadline_problem(value: str, lws: Obj) -> str | None:
    """The rule a `rollout-progress-deadline-seconds` value breaks on `lws`, or None."""
    return ORDINAL_ONLY_RULE if is_hash(lws) else _parse_deadline(value)[1]


def rollout_control(lws: Obj) -> RolloutControl:
    """Parse the rollout-control annotations of an LWS with the rules the webhook applies
    (`paused_problem`, `deadline_problem`), so a value means the same in both."""
    annotations = annotations_of(lws)
    errors: list[AnnotationError] = []
    paused: bool | None = None
    deadline: int | None = None
    for key, problem_of in (
        (ext.ANNOTATION_ROLLOUT_PAUSED, paused_problem),
        (ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE, deadline_problem),
    ):
        if key not in annotations:
            continue
        value = str(annotations[key])
        problem = problem_of(value, lws)
        if problem is not None:
            errors.append(AnnotationError(key, value, problem))
        elif key == ext.ANNOTATION_ROLLOUT_PAUSED:
            paused = _parse_paused(value)[0]
        else:
            deadline = _parse_deadline(value)[0]
    return RolloutControl(paused, deadline, tuple(errors))


def held_decision(
    decision: RolloutDecision,
    *,
    lws_name: str,
    sts: LeaderStatefulSetView | None,
    budget: RolloutBudget,
    revision_created: bool,
) -> RolloutDecision:
    """What to apply instead of `decision` while the rollout is held.

    The partition stays (raised to freeze every existing group when a new template arrived, and
    never below the user's partition); the surge groups that exist stay, no new ones are made.
    """
    if sts is None:
        return decision  # nothing exists yet: creation is not a rollout
    try:
        previous_replicas = go_atoi(sts.replicas_annotation or "")
    except GoParseError:
        previous_replicas = budget.replicas
    surge = min(max(0, sts.replicas - previous_replicas), budget.surge)
    replicas = budget.replicas + surge
    partition = sts.partition
    if revision_created:
        partition = max(partition, min(budget.replicas, sts.replicas))
    partition = max(partition, budget.user_partition)
    return RolloutDecision(partition, replicas, surge_reclaim_events(lws_name, sts.replicas, replicas))


def _condition(conditions: Iterable[Obj], condition_type: str) -> Obj | None:
    return next((cond for cond in conditions if cond.get("type") == condition_type), None)


def last_progress(
    *, revision: Obj | None, revision_key: str, pods: Iterable[Obj], conditions: Sequence[Obj]
) -> datetime | None:
    """The newest sign of progress of the rollout to `revision_key` (None: none observed)."""
    times = [parse_time(metadata(revision).get("creationTimestamp"))] if revision is not None else []
    for pod in pods:
        if labels_of(pod).get(c.LABEL_TEMPLATE_REVISION_HASH) != revision_key:
            continue
        times += [parse_time(metadata(pod).get("creationTimestamp")), ready_since(pod)]
    paused = _condition(conditions, ext.CONDITION_ROLLOUT_PAUSED)
    if paused is not None and paused.get("status") == c.CONDITION_FALSE:
        times.append(parse_time(paused.get("lastTransitionTime")))  # resumed then
    deadline = _condition(conditions, ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED)
    if deadline is not None and deadline.get("status") == c.CONDITION_FALSE:
        # Stamped when a template change starts a step (see rollout_conditions): an undo goes back
        # to an existing revision whose creation and pods are old, so they cannot say when it began.
        times.append(parse_time(deadline.get("lastTransitionTime")))
    known = [t if t.tzinfo else t.replace(tzinfo=UTC) for t in times if t is not None]
    return max(known) if known else None


def waiting_ordinals(states: Sequence[GroupState], budget: RolloutBudget) -> list[int]:
    """Ordinals the rollout waits on: not ready, at or above the user's partition (groups held
    below it are not the rollout's business). A ready group on the old revision is not waited on:
    releasing it is the controller's own next step."""
    return [idx for idx, state in enumerate(states) if idx >= budget.user_partition and not state.ready]


@dataclass(frozen=True)
class DeadlineCheck:
    """`exceeded` with the time progress was last seen, or the seconds until the deadline falls."""

    exceeded: bool
    since: datetime | None = None
    requeue_after: float | None = None


def check_deadline(
    *, seconds: int | None, under_way: bool, waiting: Sequence[int], since: datetime | None, now: datetime
) -> DeadlineCheck:
    """Deployment's progressDeadlineSeconds arithmetic on one step: exceeded once `seconds` have
    passed since the last progress while groups are still waited on."""
    if seconds is None or not under_way or not waiting or since is None:
        return DeadlineCheck(False)
    deadline = since + timedelta(seconds=seconds)
    if now >= deadline:
        return DeadlineCheck(True, since)
    # A second more than the rest, so the reconcile lands after the deadline, not just before it.
    return DeadlineCheck(False, since, (deadline - now).total_seconds() + 1.0)


@dataclass(frozen=True)
class Stall:
    """Why a rollout is past its deadline: the diagnosis of the first group it waits on."""

    ordinal: int
    waiting: int
    seconds: int
    diagnosis: Diagnosis | None

    @property
    def reason(self) -> str:
        return self.diagnosis.cause if self.diagnosis else "NotReady"

    @property
    def message(self) -> str:
        why = self.diagnosis.message if self.diagnosis else "not ready"
        return (
            f"no progress for {self.seconds}s, rollout halted with {self.waiting} group(s) not ready; "
            f"group {self.ordinal}: {why}"
        )


def _make(
    condition_type: str, status: str, reason: str, message: str, generation: int, now: datetime
) -> Condition:
    return {
        "type": condition_type,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }


PAUSED_MESSAGE = (
    f"rollout paused by {ext.ANNOTATION_ROLLOUT_PAUSED}: the partition and surge hold until it is "
    f'"{ext.ROLLOUT_PAUSED_FALSE}"'
)


RESUMED_MESSAGE = "rollout resumed"


PROGRESSING_MESSAGE = "the rollout is within its progress deadline"


NEW_STEP_MESSAGE = "a template change started a rollout step; its progress deadline runs from now"


def _desired(
    control: RolloutControl, stall: Stall | None, stored: Sequence[Obj], new_step: bool
) -> dict[str, tuple[str, str, str] | None]:
    """(status, reason, message) per our condition type; None drops it; absent keeps it as is."""
    desired: dict[str, tuple[str, str, str] | None] = {}
    had = {str(cond.get("type")) for cond in stored}
    if control.paused:
        desired[ext.CONDITION_ROLLOUT_PAUSED] = (c.CONDITION_TRUE, ext.REASON_ROLLOUT_PAUSED, PAUSED_MESSAGE)
    elif control.paused is False and ext.CONDITION_ROLLOUT_PAUSED in had:
        desired[ext.CONDITION_ROLLOUT_PAUSED] = (
            c.CONDITION_FALSE,
            ext.REASON_ROLLOUT_RESUMED,
            RESUMED_MESSAGE,
        )
    elif control.paused is None and not _annotation_error(control, ext.ANNOTATION_ROLLOUT_PAUSED):
        desired[ext.CONDITION_ROLLOUT_PAUSED] = None
    deadline = ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED
    if control.paused:
        pass  # the deadline is suspended while paused: its condition stays as it was
    elif control.deadline_seconds is None:
        desired[deadline] = None
    elif stall is not None:
        desired[deadline] = (c.CONDITION_TRUE, stall.reason, stall.message)
    elif new_step:
        desired[deadline] = (c.CONDITION_FALSE, ext.REASON_ROLLOUT_PROGRESSING, NEW_STEP_MESSAGE)
    elif deadline in had:
        desired[deadline] = (c.CONDITION_FALSE, ext.REASON_ROLLOUT_PROGRESSING, PROGRESSING_MESSAGE)
    invalid = ext.CONDITION_ROLLOUT_ANNOTATION_INVALID
    if control.errors:
        text = "; ".join(error.message for error in control.errors)
        desired[invalid] = (c.CONDITION_TRUE, ext.REASON_ROLLOUT_ANNOTATION_INVALID, text)
    elif invalid in had:
        desired[invalid] = (
            None
            if not control.opted_in
            else (
                c.CONDITION_FALSE,
                ext.REASON_ROLLOUT_ANNOTATIONS_VALID,
                "the rollout annotations are valid",
            )
        )
    return desired


def _annotation_error(control: RolloutControl, key: str) -> bool:
    return any(error.key == key for error in control.errors)


def rollout_conditions(
    stored: Sequence[Obj],
    control: RolloutControl,
    *,
    stall: Stall | None,
    generation: int,
    now: datetime,
    lws_name: str,
    partition: int,
    new_step: bool = False,
) -> tuple[list[Condition], bool, tuple[ControllerEvent, ...]]:
    """Merge our conditions into `stored` (upstream's are left alone) and the events to record for
    each transition. A condition is rewritten only when its status, reason or message changes,
    except that `new_step` (a template change this round) restamps the deadline condition's
    lastTransitionTime, from which the deadline of the new step runs."""
    conditions = [dict(cond) for cond in stored]
    events: list[ControllerEvent] = []
    changed = False
    for condition_type, want in _desired(control, stall, stored, new_step).items():
        restamp = new_step and condition_type == ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED
        index = next((i for i, cond in enumerate(conditions) if cond.get("type") == condition_type), None)
        current = conditions[index] if index is not None else None
        if want is None:
            if index is not None:
                del conditions[index]
                changed = True
                events += _events(condition_type, None, current, lws_name, partition)
            continue
        status, reason, message = want
        if (
            current is not None
            and not restamp
            and (current.get("status"), current.get("reason"), current.get("message")) == want
        ):
            continue
        new = _make(condition_type, status, reason, message, generation, now)
        if current is not None and current.get("status") == status and not restamp:
            new["lastTransitionTime"] = current.get("lastTransitionTime", new["lastTransitionTime"])
        if index is None:
            conditions.append(new)
        else:
            conditions[index] = new
        changed = True
        events += _events(condition_type, new, current, lws_name, partition)
    return conditions, changed, tuple(events)


def _events(
    condition_type: str, new: Condition | None, old: Obj | None, lws_name: str, partition: int
) -> list[ControllerEvent]:
    was_true = old is not None and old.get("status") == c.CONDITION_TRUE
    is_true = new is not None and new.get("status") == c.CONDITION_TRUE
    normal, warning = c.EVENT_TYPE_NORMAL, c.EVENT_TYPE_WARNING
    if condition_type == ext.CONDITION_ROLLOUT_PAUSED:
        if is_true and not was_true:
            text = f"Rollout of {lws_name} paused at partition {partition}"
            return [ControllerEvent(normal, ext.EVENT_ROLLOUT_PAUSED, c.EVENT_ACTION_UPDATE, text)]
        if was_true and not is_true:
            text = f"Rollout of {lws_name} resumed at partition {partition}"
            return [ControllerEvent(normal, ext.EVENT_ROLLOUT_RESUMED, c.EVENT_ACTION_UPDATE, text)]
    if condition_type == ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED:
        if (
            is_true
            and new is not None
            and (not was_true or old is None or old.get("reason") != new["reason"])
        ):
            reason = ext.EVENT_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED
            return [
                ControllerEvent(warning, reason, c.EVENT_ACTION_WAIT, f"{new['reason']}: {new['message']}")
            ]
        if was_true and not is_true:
            text = f"Rollout of {lws_name} progresses again at partition {partition}"
            return [ControllerEvent(normal, ext.EVENT_ROLLOUT_PROGRESSING_AGAIN, c.EVENT_ACTION_UPDATE, text)]
    if condition_type == ext.CONDITION_ROLLOUT_ANNOTATION_INVALID and new is not None and is_true:
        # Rewritten only when the message changed (rollout_conditions), so each rewrite is news.
        reason = ext.EVENT_ROLLOUT_ANNOTATION_INVALID
        return [ControllerEvent(warning, reason, c.EVENT_ACTION_UPDATE, str(new["message"]))]
    return []


def rollout_notes(lws: Obj) -> list[str]:
    """What `lws status` and `lws plan` say about rollout control, from the controller's own
    conditions (so they show what the controller acts on, not only what was asked)."""
    notes = []
    conditions = (lws.get("status") or {}).get("conditions") or []
    for condition_type, prefix in (
        (ext.CONDITION_ROLLOUT_PAUSED, "rollout paused"),
        (ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, "rollout halted at its progress deadline"),
        (ext.CONDITION_ROLLOUT_ANNOTATION_INVALID, "rollout annotation ignored"),
    ):
        condition = _condition(conditions, condition_type)
        if condition is None or condition.get("status") != c.CONDITION_TRUE:
            continue
        if condition_type == ext.CONDITION_ROLLOUT_PAUSED:
            notes.append(f"{prefix}: the partition and surge hold until `lws rollout resume`")
        else:
            notes.append(f"{prefix} ({condition.get('reason')}): {condition.get('message')}")
    return notes
