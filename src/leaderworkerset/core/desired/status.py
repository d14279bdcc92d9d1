"""LeaderWorkerSet status, Ordinal identity.

Counts come from the leader pods and their worker StatefulSets. Conditions follow upstream's
peculiar but observable rules, kept on purpose because users and tests watch them:

* the controller only ever sets conditions True; a stored condition turns False only when a
  mutually exclusive one (Available vs Progressing, Available vs UpdateInProgress) is set True;
* a stored condition is replaced wholesale when its status or observedGeneration differs;
* the desired list is applied with a short-circuit: after the first change, the rest waits for
  the next reconcile;
* afterwards every stored condition's observedGeneration is bumped to metadata.generation.

"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import Condition, apply_conditions, format_time
from leaderworkerset.core.groups.state import group_state, is_exhausted, parse_group_index, pod_ready
from leaderworkerset.core.objects import ControllerEvent, Obj, lws_replicas, lws_size, name_of
from leaderworkerset.core.rollout.partition import rolling_update_configuration

_CONDITION_TEXT: dict[str, tuple[str, str]] = {
    c.CONDITION_AVAILABLE: (c.REASON_ALL_GROUPS_READY, c.MESSAGE_ALL_GROUPS_READY),
    c.CONDITION_UPDATE_IN_PROGRESS: (c.REASON_GROUPS_UPDATING, c.MESSAGE_GROUPS_UPDATING),
    c.CONDITION_PROGRESSING: (c.REASON_GROUPS_PROGRESSING, c.MESSAGE_GROUPS_PROGRESSING),
    c.CONDITION_DEGRADED: (c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED, c.MESSAGE_DEGRADED_TRUE),
}


# The False forms written while a group is retained after exhausting its restart budget.
_DEGRADED_FALSE_TEXT: dict[str, tuple[str, str]] = {
    c.CONDITION_AVAILABLE: (c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED, c.MESSAGE_AVAILABLE_FALSE_DEGRADED),
    c.CONDITION_PROGRESSING: (c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED, c.MESSAGE_PROGRESSING_FALSE_DEGRADED),
    c.CONDITION_UPDATE_IN_PROGRESS: (
        c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED,
        c.MESSAGE_UPDATE_IN_PROGRESS_FALSE_DEGRADED,
    ),
    c.CONDITION_DEGRADED: (c.REASON_AS_EXPECTED, c.MESSAGE_DEGRADED_FALSE),
}


def hpa_pod_selector(lws_name: str) -> str:
    """Label-selector string of the leader pods (keys sorted, as Go renders selectors)."""
    pairs = {c.LABEL_SET_NAME: lws_name, c.LABEL_WORKER_INDEX: c.LEADER_WORKER_INDEX}
    return ",".join(f"{key}={pairs[key]}" for key in sorted(pairs))


@dataclass(frozen=True)
class GroupCounts:
    """Tallies over the leader pods whose group exists (leader, plus worker STS when size > 1).

    "Window" means non-surge indexes at or above the user partition: [partition, replicas).
    """

    ready: int = 0
    updated: int = 0
    ready_non_surge: int = 0
    window: int = 0
    window_updated: int = 0
    window_ready_updated: int = 0


def count_groups(
    *,
    replicas: int,
    size: int,
    user_partition: int,
    revision_key: str,
    leader_pods: Iterable[Obj],
    worker_statefulsets: Mapping[str, Obj],
) -> GroupCounts:
    """Tally groups for status; raises GoParseError on a leader with a non-integer group index.

    `worker_statefulsets` maps StatefulSet name → object; with size > 1 a leader without a worker
    StatefulSet of its own name is not counted at all (it is still being created).
    """
    ready = updated = ready_non_surge = window = window_updated = window_ready_updated = 0
    for pod in leader_pods:
        index = parse_group_index(pod)
        worker_sts = None
        if size != 1:
            worker_sts = worker_statefulsets.get(name_of(pod))
            if worker_sts is None:
                continue
        state = group_state(pod, worker_sts, revision_key)
        in_window = user_partition <= index < replicas
        ready += state.ready
        updated += state.updated
        window += in_window
        window_updated += in_window and state.updated
        ready_non_surge += index < replicas and state.ready
        window_ready_updated += in_window and state.ready_and_updated
    return GroupCounts(ready, updated, ready_non_surge, window, window_updated, window_ready_updated)


def desired_condition_types(counts: GroupCounts, replicas: int) -> list[str]:
    """Which conditions to set True, in order (order matters: see the short-circuit)."""
    if counts.window_updated < counts.window:
        return [c.CONDITION_UPDATE_IN_PROGRESS, c.CONDITION_PROGRESSING]
    if counts.ready_non_surge == replicas and counts.window_ready_updated == counts.window:
        return [c.CONDITION_AVAILABLE]
    return [c.CONDITION_PROGRESSING]


@dataclass(frozen=True)
class Degradation:
    """Groups retained after exhausting their restart budget, and how many of those are Ready."""

    groups: int = 0
    ready: int = 0

    @classmethod
    def of(cls, leader_pods: Iterable[Obj]) -> Degradation:
        exhausted = [p for p in leader_pods if is_exhausted(p)]
        return cls(len(exhausted), sum(1 for p in exhausted if pod_ready(p)))


def desired_conditions(
    counts: GroupCounts, replicas: int, degradation: Degradation, generation: int, now: datetime
) -> list[Condition]:
    """The ordered condition list to apply, Degraded last (True or False/AsExpected).

    Without retained groups the v0.x list is kept as is. With them, Available can never be True;
    Available and UpdateInProgress are written False with the budget reason, and Progressing stays
    True only while some non-retained group is still on its way (mirrors the Hash flow).
    """

    def true(t: str) -> Condition:
        return make_condition(t, generation, now)

    def false(t: str) -> Condition:
        return make_false_condition(t, generation, now)

    if degradation.groups == 0:
        return [*(true(t) for t in desired_condition_types(counts, replicas)), false(c.CONDITION_DEGRADED)]
    ready_non_degraded = max(0, counts.ready_non_surge - degradation.ready)
    progressing = ready_non_degraded + degradation.groups < replicas
    progress = true(c.CONDITION_PROGRESSING) if progressing else false(c.CONDITION_PROGRESSING)
    if counts.window_updated < counts.window:
        conditions = [false(c.CONDITION_AVAILABLE), true(c.CONDITION_UPDATE_IN_PROGRESS), progress]
    else:
        conditions = [false(c.CONDITION_AVAILABLE), progress, false(c.CONDITION_UPDATE_IN_PROGRESS)]
    return [*conditions, true(c.CONDITION_DEGRADED)]


def condition_event(condition: Condition, ready: int, replicas: int) -> ControllerEvent:
    """The event recorded whenever conditions change: first desired condition + group counts."""
    suffix = c.MESSAGE_CONDITION_EVENT_SUFFIX_FMT.format(ready=ready, total=replicas)
    return ControllerEvent(
        c.EVENT_TYPE_NORMAL,
        str(condition["reason"]),
        c.EVENT_ACTION_UPDATE,
        str(condition["message"]) + suffix,
    )


@dataclass(frozen=True)
class StatusPlan:
    """The status to write (when `changed`), whether the rollout is done, and the event to record."""

    status: dict[str, Any]
    changed: bool
    update_done: bool
    event: ControllerEvent | None


def plan_status(
    lws: Obj,
    leader_sts: Obj,
    *,
    revision_key: str,
    leader_pods: Iterable[Obj],
    worker_statefulsets: Mapping[str, Obj],
    now: datetime,
) -> StatusPlan:
    """Compute the Ordinal LWS status from the leader StatefulSet, leader pods and worker STSs.

    `update_done` (no user partition and every non-surge group ready on the current revision) is
    the signal to delete old ControllerRevisions.
    """
    meta = lws.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    replicas = lws_replicas(lws)
    old: Mapping[str, Any] = lws.get("status") or {}
    status: dict[str, Any] = copy.deepcopy(dict(old))

    status["replicas"] = int((leader_sts.get("status") or {}).get("replicas") or 0)
    status["observedGeneration"] = generation
    if not status.get("hpaPodSelector"):
        status["hpaPodSelector"] = hpa_pod_selector(str(meta.get("name") or ""))

    user_partition = int(rolling_update_configuration(lws).get("partition") or 0)
    leader_pods = list(leader_pods)
    degradation = Degradation.of(leader_pods)
    counts = count_groups(
        replicas=replicas,
        size=lws_size(lws),
        user_partition=user_partition,
        revision_key=revision_key,
        leader_pods=leader_pods,
        worker_statefulsets=worker_statefulsets,
    )
    status["readyReplicas"] = counts.ready
    status["updatedReplicas"] = counts.updated

    desired = desired_conditions(counts, replicas, degradation, generation, now)
    conditions, conditions_changed = apply_conditions(old.get("conditions") or [], desired, generation, now)
    if conditions:
        status["conditions"] = conditions

    # While degraded, the event speaks of the retained groups (the last, Degraded, condition).
    reported = desired[-1] if degradation.groups else desired[0]
    event = condition_event(reported, counts.ready, replicas) if conditions_changed else None
    update_done = user_partition == 0 and counts.window_ready_updated == replicas
    status = omit_empty(status)
    return StatusPlan(status, conditions_changed or _fields_changed(old, status), update_done, event)


# The zero value of every LeaderWorkerSetStatus field upstream tags `omitempty` (all of them):
# Go's encoder leaves such a field out, so a set scaled to 0 has no `replicas` at all and
# `kubectl get -o jsonpath='{.status.replicas}'` prints nothing. metav1.Condition tags only
# observedGeneration `omitempty`; type, status, lastTransitionTime, reason and message are always
# written, even when empty.
_STATUS_ZERO: dict[str, Any] = {
    "replicas": 0,
    "readyReplicas": 0,
    "updatedReplicas": 0,
    "observedGeneration": 0,
    "hpaPodSelector": "",
    "conditions": [],
}


_CONDITION_ZERO: dict[str, Any] = {"observedGeneration": 0}


def omit_empty(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as upstream's Go types serialise it: `omitempty` fields at their zero value
    (or null) are left out, in the status and in each condition."""
    kept = {k: v for k, v in status.items() if not _is_empty(v, _STATUS_ZERO, k)}
    if "conditions" in kept:
        kept["conditions"] = [
            {k: v for k, v in cond.items() if not _is_empty(v, _CONDITION_ZERO, k)}
            for cond in kept["conditions"]
        ]
    return kept


def _is_empty(value: Any, zeros: Mapping[str, Any], key: str) -> bool:
    # `False == 0` in Python: compare types too, so a mistyped stored value is not silently dropped.
    return key in zeros and (value is None or (type(value) is type(zeros[key]) and value == zeros[key]))


_COUNTED_FIELDS = ("replicas", "observedGeneration", "hpaPodSelector", "readyReplicas", "updatedReplicas")


def _fields_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    # `new` is in its omitted form: an explicit zero still stored (written before we omitted
    # them) counts as a change, so that the stored status converges to upstream's shape.
    return any(old.get(f) != new.get(f) for f in _COUNTED_FIELDS)


def make_condition(condition_type: str, generation: int, now: datetime) -> Condition:
    """A True condition of one of the three LWS progress types, with upstream's reason and message."""
    reason, message = _CONDITION_TEXT.get(condition_type, _CONDITION_TEXT[c.CONDITION_PROGRESSING])
    return {
        "type": condition_type,
        "status": c.CONDITION_TRUE,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }


def make_false_condition(condition_type: str, generation: int, now: datetime) -> Condition:
    """A False condition with its budget-related reason and message."""
    reason, message = _DEGRADED_FALSE_TEXT[condition_type]
    return {
        "type": condition_type,
        "status": c.CONDITION_FALSE,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }
