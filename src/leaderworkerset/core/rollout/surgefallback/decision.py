"""Capacity-aware surge of an Ordinal LWS (`leaderworkerset.dev/surge-fallback-seconds`).

Upstream's rolling update with maxSurge > 0 and maxUnavailable 0 waits for its surge groups to be
Ready before it replaces a single old group; on a cluster without free accelerators they stay
Pending and the rollout never moves. With the annotation, the controller watches the surge groups'
pods: once one has been unschedulable (PodScheduled=False, reason Unschedulable) for the given
seconds, it gives the surge back (the leader StatefulSet returns to spec.replicas) and replaces old
groups without surge, `max(maxUnavailable, 1)` at a time: the annotation is the user's consent to that
one group. It surges again when the eligible nodes have a surge group's accelerators free.

Hysteresis, so it does not flap: it falls back only after the surge was unschedulable for the whole
period; it checks for capacity only once the fallback is that old, and only while no group is being
replaced without surge (a recreated group frees its accelerators for a moment, which would look like
capacity). A resumed surge that cannot schedule again falls back again after the full period.

The one piece of state is when the fallback happened: an annotation the controller writes on the
LWS (`surge-fallback-since`), so a restarted manager carries on. It is metadata, not template: it
starts no rollout and upstream's controller ignores it. Everything else is read from the pods and
nodes each round. The decision below is pure; `controllers/leaderworkerset/surgefallback.py` gathers its
inputs and applies it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import Condition, format_time, parse_time
from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi
from leaderworkerset.core.groups.state import GroupState
from leaderworkerset.core.objects import (
    ORDINAL_ONLY_RULE,
    ControllerEvent,
    Obj,
    annotations_of,
    is_hash,
    labels_of,
)
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    RolloutDecision,
    surge_reclaim_events,
)

MAX_SURGE_FALLBACK_SECONDS = 24 * 3600
# While the surge is given back, capacity is looked at again this often (nodes and other pods
# change without an event on the set); the annotation's period, within these bounds.
MIN_CAPACITY_POLL_SECONDS = 5
MAX_CAPACITY_POLL_SECONDS = 60

SECONDS_RULE = f"must be a whole number of seconds from 1 to {MAX_SURGE_FALLBACK_SECONDS}"


# --- the annotations ---------------------------------------------------------------------------------


def seconds_problem(value: str, lws: Obj) -> str | None:
    """The rule `value` breaks as surge-fallback-seconds of `lws`, or None when it is valid."""
    if is_hash(lws):
        return ORDINAL_ONLY_RULE
    try:
        seconds = go_atoi(value)
    except GoParseError:
        return SECONDS_RULE
    return None if 1 <= seconds <= MAX_SURGE_FALLBACK_SECONDS else SECONDS_RULE


def fallback_seconds(lws: Obj) -> int | None:
    """The annotation's seconds; None when absent or invalid (then the surge behaves as upstream's)."""
    value = annotations_of(lws).get(ext.ANNOTATION_SURGE_FALLBACK_SECONDS)
    if value is None or seconds_problem(str(value), lws) is not None:
        return None
    return go_atoi(str(value))


def fallback_since(lws: Obj) -> datetime | None:
    """When the controller gave the surge back (its own annotation); None: it has not."""
    return parse_time(annotations_of(lws).get(ext.ANNOTATION_SURGE_FALLBACK_SINCE))


def annotations_with_since(obj: Obj, mode: SurgeMode) -> dict[str, str] | None:
    """The object's annotations with `surge-fallback-since` as `mode` has it; None when they stay
    (a stored time is never rewritten while the fallback lasts)."""
    current = annotations_of(obj).get(ext.ANNOTATION_SURGE_FALLBACK_SINCE)
    want = None if mode.since is None else format_time(mode.since)
    if current == want or (want is not None and mode.transition is not Transition.FALLBACK):
        return None
    annotations = {
        k: str(v) for k, v in annotations_of(obj).items() if k != ext.ANNOTATION_SURGE_FALLBACK_SINCE
    }
    if want is not None:
        annotations[ext.ANNOTATION_SURGE_FALLBACK_SINCE] = want
    return annotations


# --- what the pods and nodes say -------------------------------------------------------------------


@dataclass(frozen=True)
class Unschedulable:
    """A surge group with a pod the scheduler could not place, since when, and its words."""

    ordinal: int
    since: datetime
    message: str
    where: str = ""  # which set it belongs to, when that is not the set itself (a DS's role)

    @property
    def subject(self) -> str:
        return f"{self.where} surge group {self.ordinal}" if self.where else f"surge group {self.ordinal}"


def unschedulable_groups(pods: Iterable[Obj], first_ordinal: int, where: str = "") -> list[Unschedulable]:
    """Groups at or above `first_ordinal` with a pod PodScheduled=False/Unschedulable, each with the
    earliest such pod (the group has been blocked at least that long), ordered by ordinal."""
    found: dict[int, Unschedulable] = {}
    for pod in pods:
        index = labels_of(pod).get(c.LABEL_GROUP_INDEX, "")
        if not index.isdigit() or int(index) < first_ordinal:
            continue
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") != "PodScheduled" or cond.get("status") != c.CONDITION_FALSE:
                continue
            since = parse_time(cond.get("lastTransitionTime"))
            if cond.get("reason") != "Unschedulable" or since is None:
                continue
            ordinal = int(index)
            if ordinal not in found or since < found[ordinal].since:
                found[ordinal] = Unschedulable(ordinal, since, str(cond.get("message") or ""), where)
    return [found[o] for o in sorted(found)]


@dataclass(frozen=True)
class SurgeCapacity:
    """Whether one surge group fits on the eligible nodes now (`core.scheduling.accelerators`)."""

    fits: bool
    needs: Mapping[str, int]  # the accelerators of one group
    free: Mapping[str, int]  # free on the eligible nodes, summed


def describe(accelerators: Mapping[str, int]) -> str:
    return ", ".join(f"{count} {name}" for name, count in sorted(accelerators.items())) or "no accelerators"


# --- the decision ------------------------------------------------------------------------------------


class Transition(enum.Enum):
    FALLBACK = "fallback"  # the surge is given back now
    RESUMED = "resumed"  # capacity came back: surge again
    ENDED = "ended"  # the rollout ended while the surge was given back
    OFF = "off"  # the annotation went away (or became invalid)


@dataclass(frozen=True)
class SurgeInputs:
    seconds: int | None  # the annotation (None: absent or invalid)
    since: datetime | None  # the controller's annotation (None: not in fallback)
    budget: RolloutBudget
    sts: LeaderStatefulSetView | None
    under_way: bool  # a rollout is in progress (a revision of another template exists)
    states: Sequence[GroupState] = ()  # per leader StatefulSet ordinal
    unschedulable: Sequence[Unschedulable] = ()  # surge groups' pods the scheduler could not place
    capacity: SurgeCapacity | None = None  # read only when `wants_capacity` said so; None: unknown


@dataclass(frozen=True)
class SurgeMode:
    """Whether this round replaces groups without surge, the `since` to store, and why."""

    fallback: bool = False
    since: datetime | None = None
    transition: Transition | None = None
    message: str = ""
    requeue_after: float | None = None


SURGE = SurgeMode()


@dataclass(frozen=True)
class Signals:
    """What a controller observed, in the decision's terms (an LWS's or a DisaggregatedSet's)."""

    seconds: int | None  # the annotation (None: absent or invalid)
    since: datetime | None  # the controller's annotation (None: not in fallback)
    active: bool  # a rollout with surge is under way, and the set opted in
    ended: bool  # no rollout is under way (any more)
    blocked: Sequence[Unschedulable] = ()  # surge pods the scheduler could not place
    quiet: bool = False  # nothing is being replaced: free capacity means capacity
    step: int = 1  # groups replaced at a time without surge
    capacity: SurgeCapacity | None = None  # read only when `wants_capacity` said so; None: unknown


def lws_signals(inputs: SurgeInputs) -> Signals:
    """An LWS's signals: surge groups are the ordinals at or above spec.replicas; quiet when every
    group below them is Ready (a group recreated without surge frees its accelerators for a moment)."""
    replicas, states = inputs.budget.replicas, inputs.states
    return Signals(
        seconds=inputs.seconds,
        since=inputs.since,
        active=(
            inputs.seconds is not None
            and inputs.sts is not None
            and inputs.budget.surge > 0
            and inputs.under_way
        ),
        ended=not inputs.under_way,
        blocked=[u for u in inputs.unschedulable if u.ordinal >= replicas],
        quiet=len(states) >= replicas and all(states[o].ready for o in range(replicas)),
        step=max(inputs.budget.unavailable, 1),
        capacity=inputs.capacity,
    )


def _held_for(signals: Signals, now: datetime) -> float:
    return 0.0 if signals.since is None else (now - signals.since).total_seconds()


def capacity_poll_seconds(seconds: int) -> float:
    return float(min(max(seconds, MIN_CAPACITY_POLL_SECONDS), MAX_CAPACITY_POLL_SECONDS))


def wants_capacity(inputs: SurgeInputs | Signals, now: datetime) -> bool:
    """Whether the decision will look at the nodes' free capacity (a LIST of nodes and pods, so
    asked only while the surge is given back, the period has passed and nothing is in flight)."""
    signals = lws_signals(inputs) if isinstance(inputs, SurgeInputs) else inputs
    return (
        signals.active
        and signals.since is not None
        and _held_for(signals, now) >= (signals.seconds or 0)
        and signals.quiet
    )


def decide_surge(inputs: SurgeInputs | Signals, now: datetime) -> SurgeMode:
    """Surge (upstream's arithmetic) or fall back (replace without surge); see the module's docstring."""
    signals = lws_signals(inputs) if isinstance(inputs, SurgeInputs) else inputs
    if not signals.active:
        if signals.since is None:
            return SURGE
        ended = signals.seconds is not None and signals.ended
        transition = Transition.ENDED if ended else Transition.OFF
        return SurgeMode(transition=transition, message="the rollout is complete" if ended else "")
    seconds = int(signals.seconds or 0)
    if signals.since is not None:
        return _while_fallen_back(signals, seconds, now)
    return _while_surging(signals, seconds, now)


def _while_surging(signals: Signals, seconds: int, now: datetime) -> SurgeMode:
    if not signals.blocked:
        return SURGE
    first = min(signals.blocked, key=lambda u: (u.since, u.ordinal))
    waited = (now - first.since).total_seconds()
    if waited < seconds:
        # Look again when the period would be over (plus a second, so it is over by then).
        return SurgeMode(requeue_after=seconds - waited + 1.0)
    why = f": {first.message}" if first.message else ""
    message = (
        f"{first.subject} unschedulable for {int(waited)}s{why}; the surge is given back "
        f"and groups are replaced in place, {signals.step} at a time"
    )
    return SurgeMode(
        fallback=True,
        since=now,
        transition=Transition.FALLBACK,
        message=message,
        requeue_after=float(seconds),
    )


def _while_fallen_back(signals: Signals, seconds: int, now: datetime) -> SurgeMode:
    held = _held_for(signals, now)
    poll = capacity_poll_seconds(seconds)
    stay = SurgeMode(fallback=True, since=signals.since)
    if held < seconds:
        return replace(stay, requeue_after=seconds - held + 1.0)
    if not signals.quiet:
        return stay  # the group being replaced turning Ready brings the next round
    capacity = signals.capacity
    if capacity is None or not capacity.fits:
        return replace(stay, requeue_after=poll)
    message = (
        f"the eligible nodes have {describe(capacity.free)} free, a surge group needs "
        f"{describe(capacity.needs)}: surging again"
    )
    return SurgeMode(transition=Transition.RESUMED, message=message)


def without_surge_budget(budget: RolloutBudget) -> RolloutBudget:
    """The rollout knobs while the surge is given back: no surge, at least one group at a time."""
    return replace(budget, surge=0, unavailable=max(budget.unavailable, 1))


PlanFn = Callable[[RolloutBudget, LeaderStatefulSetView], RolloutDecision]


def fallback_decision(
    plan: PlanFn, *, lws_name: str, budget: RolloutBudget, sts: LeaderStatefulSetView
) -> RolloutDecision:
    """Upstream's arithmetic without surge and with `max(maxUnavailable, 1)`: partition and replicas
    when groups are replaced without surge. The StatefulSet is seen without its surge ordinals (they go
    now), so the first step releases one group, not one more per surge group given back."""
    seen = replace(sts, replicas=min(sts.replicas, budget.replicas))
    decision = plan(without_surge_budget(budget), seen)
    reclaim = surge_reclaim_events(lws_name, sts.replicas, decision.replicas)
    return replace(decision, events=(*reclaim, *decision.events))


# --- condition and events ----------------------------------------------------------------------------


def _find(conditions: Sequence[Obj], condition_type: str) -> Obj | None:
    return next((cond for cond in conditions if cond.get("type") == condition_type), None)


def surge_conditions(
    stored: Sequence[Obj], mode: SurgeMode, *, generation: int, now: datetime, lws_name: str
) -> tuple[list[Condition], tuple[ControllerEvent, ...]] | None:
    """The conditions with `SurgeFallback` as `mode` has it, and the events of a transition; None
    when nothing changes (always for a set that never fell back)."""
    current = _find(stored, ext.CONDITION_SURGE_FALLBACK)
    was_true = current is not None and current.get("status") == c.CONDITION_TRUE
    others = [dict(cond) for cond in stored if cond is not current]
    events: tuple[ControllerEvent, ...] = ()
    if mode.fallback:
        if was_true:
            return None
        status, reason = c.CONDITION_TRUE, ext.REASON_SURGE_UNSCHEDULABLE
        message = mode.message or "the surge is given back, groups are replaced in place"
        text = f"Rollout of {lws_name}: {message}"
        events = (
            ControllerEvent(c.EVENT_TYPE_WARNING, ext.EVENT_SURGE_FALLBACK, c.EVENT_ACTION_UPDATE, text),
        )
    elif mode.transition is Transition.OFF:
        return None if current is None else (others, ())
    elif mode.transition in (Transition.RESUMED, Transition.ENDED) and current is not None:
        status, message = c.CONDITION_FALSE, mode.message
        if mode.transition is Transition.RESUMED:
            reason = ext.REASON_SURGE_RESUMED
            text = f"Rollout of {lws_name}: {message}"
            events = (
                ControllerEvent(c.EVENT_TYPE_NORMAL, ext.EVENT_SURGE_RESUMED, c.EVENT_ACTION_UPDATE, text),
            )
        else:
            reason = ext.REASON_SURGE_ROLLOUT_COMPLETE
    else:
        return None
    condition: Condition = {
        "type": ext.CONDITION_SURGE_FALLBACK,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }
    return [*others, condition], events


def surge_notes(lws: Obj) -> list[str]:
    """What `lws status` says about the surge, from the controller's own condition."""
    cond = _find((lws.get("status") or {}).get("conditions") or [], ext.CONDITION_SURGE_FALLBACK)
    if cond is None or cond.get("status") != c.CONDITION_TRUE:
        return []
    since = annotations_of(lws).get(ext.ANNOTATION_SURGE_FALLBACK_SINCE, cond.get("lastTransitionTime"))
    return [f"surge given back since {since} ({cond.get('reason')}): {cond.get('message')}"]
