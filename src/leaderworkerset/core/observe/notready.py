"""Opt-in GroupNotReady events: a group's `lws status` line, in the cluster (docs/status.md).

`lws status` explains a group when someone asks. A set annotated
`leaderworkerset.dev/not-ready-events: "true"` is also told the moment one of its groups runs into a
problem: a Warning event on the LeaderWorkerSet gives the group and the same line (the pod
controller runs `diagnose_group` on its caches), so `kubectl describe` and event-based alerting see it
without our CLI. A Normal event follows once the group is ready.

Only problems are reported: the causes a group does not grow out of by waiting. The steps of a
normal start (not scheduled yet, workers not created yet, containers starting, not ready yet) are
not, or every group start would write a handful of events. While a reported group only moves
between such steps (a crash-looping container running again for a while), nothing more is said; the
problem coming back with the same line says nothing either, a changed line is a new event.

The annotation's rule is here (`not_ready_events_problem`), a row of `core/setannotations.py`'s
table: the webhook refuses a bad value, and with the webhooks off the controller flags it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.objects import ControllerEvent, Obj, annotations_of, is_deleting, metadata, name_of
from leaderworkerset.core.observe import diagnosis as d

REPORTED_CAUSES = frozenset(
    {
        d.CAUSE_RESTART_BUDGET_EXHAUSTED,
        d.CAUSE_CONFIG_ERROR,
        d.CAUSE_IMAGE_PULL,
        d.CAUSE_OOM_KILLED,
        d.CAUSE_CRASH_LOOP,
        d.CAUSE_CONTAINER_FAILED,
        d.CAUSE_CONTAINER_WAITING,
        d.CAUSE_FAILED_SCHEDULING,
        d.CAUSE_SCHEDULING_GATE,
        d.CAUSE_FOREIGN_WORKERS,
        d.CAUSE_NODE_NOT_READY,
    }
)
_RULE = f'must be "{ext.NOT_READY_EVENTS_TRUE}" or "{ext.NOT_READY_EVENTS_FALSE}"'


def not_ready_events_problem(value: str, _lws: Obj) -> str | None:
    """The rule `value` breaks, or None (the set-annotation table's check)."""
    return None if value in (ext.NOT_READY_EVENTS_TRUE, ext.NOT_READY_EVENTS_FALSE) else _RULE


def wants_not_ready_events(lws: Obj) -> bool:
    return annotations_of(lws).get(ext.ANNOTATION_NOT_READY_EVENTS) == ext.NOT_READY_EVENTS_TRUE


@dataclass(frozen=True)
class GroupMembers:
    """What `diagnose_group` reads of one group, picked from the group's cached pods."""

    leader: Obj | None
    pods: Sequence[Obj]


def members_to_diagnose(group_pods: Iterable[Obj]) -> GroupMembers:
    """The group's pods, and its leader: the live one (a Hash group being replaced has the
    departing leader too), the newest if several."""
    pods = list(group_pods)
    leaders = [p for p in pods if is_leader_pod(p) and not is_deleting(p)]
    leader = max(leaders, key=lambda p: str(metadata(p).get("creationTimestamp") or ""), default=None)
    if leader is None:
        leader = next((p for p in pods if is_leader_pod(p)), None)
    return GroupMembers(leader, pods)


def next_report(
    group: str, said: d.Diagnosis | None, now: d.Diagnosis | None, leader: Obj | None
) -> tuple[d.Diagnosis | None, ControllerEvent | None]:
    """What to remember as said of the group, and the event to record (None: say nothing).

    `said` is the problem last reported (None: none, or the group was ready since); `now` the
    group's diagnosis (None: ready).
    """
    related = ("Pod", name_of(leader)) if leader is not None else None
    if now is None:
        if said is None:
            return None, None
        message = f"group {group} is ready (it was: {said.message})"
        return None, ControllerEvent(
            c.EVENT_TYPE_NORMAL, ext.EVENT_GROUP_READY, c.EVENT_ACTION_RECONCILE, message, related
        )
    if now.cause not in REPORTED_CAUSES or now == said:
        return said, None
    message = f"group {group} not ready: {now.message}"
    return now, ControllerEvent(
        c.EVENT_TYPE_WARNING, ext.EVENT_GROUP_NOT_READY, c.EVENT_ACTION_RECONCILE, message, related
    )
