"""How long a group took to become ready, phase by phase, from its pods' own timestamps.

A group is ready when all `size` pods of its leader's revision exist and are Ready. Its
milestones are group-wide: the group is *created* when its first pod is, *scheduled* when its last
pod is bound (PodScheduled), *started* when the last container starts running, and *ready* when
the last pod turns Ready. Every milestone is at least the previous one (a pod's clock is one
second coarse, and a pod re-created inside the group can be bound before another is created), so
the phase durations never go negative. The `lws_group_time_to_ready_seconds` histogram observes
each phase once per group incarnation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import parse_time
from leaderworkerset.core.groups.state import pod_ready, ready_since
from leaderworkerset.core.objects import (
    Obj,
    is_deleting,
    labels_of,
    metadata,
    revision_key_of,
)

PHASE_SCHEDULED = "scheduled"  # created → last pod bound
PHASE_STARTED = "containers-started"  # bound → last container running
PHASE_READY = "ready"  # running → last pod Ready
PHASE_TOTAL = "total"  # created → ready
PHASES = (PHASE_SCHEDULED, PHASE_STARTED, PHASE_READY, PHASE_TOTAL)


def _time(text: object) -> float | None:
    moment = parse_time(text)
    return None if moment is None else moment.timestamp()


def _condition_time(pod: Obj, condition_type: str) -> float | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type and condition.get("status") == "True":
            return _time(condition.get("lastTransitionTime"))
    return None


def _started_time(pod: Obj) -> float | None:
    times = [
        _time(((status.get("state") or {}).get("running") or {}).get("startedAt"))
        for status in (pod.get("status") or {}).get("containerStatuses") or []
    ]
    known = [t for t in times if t is not None]
    return max(known) if known else None


@dataclass(frozen=True)
class Milestones:
    created: float
    scheduled: float
    started: float
    ready: float

    def durations(self) -> dict[str, float]:
        return {
            PHASE_SCHEDULED: self.scheduled - self.created,
            PHASE_STARTED: self.started - self.scheduled,
            PHASE_READY: self.ready - self.started,
            PHASE_TOTAL: self.ready - self.created,
        }


def group_milestones(leader: Obj, group_pods: Iterable[Obj], size: int) -> Milestones | None:
    """The milestones of the leader's group once it is ready; None while it is not (or a
    timestamp is missing, e.g. a status written without transition times)."""
    revision = revision_key_of(leader)
    pods = [p for p in group_pods if revision_key_of(p) == revision and not is_deleting(p)]
    if len(pods) != size or not all(pod_ready(p) for p in pods):
        return None
    created = [_time(metadata(p).get("creationTimestamp")) for p in pods]
    scheduled = [_condition_time(p, "PodScheduled") for p in pods]
    ready = [_condition_time(p, "Ready") for p in pods]
    if any(t is None for t in (*created, *scheduled, *ready)):
        return None
    first_created = min(t for t in created if t is not None)
    last_scheduled = max([first_created, *(t for t in scheduled if t is not None)])
    # A container's start is optional in a status (a simulated kubelet may omit it): then the
    # phase collapses onto the pod's scheduling.
    starts = [_started_time(p) for p in pods]
    last_started = max([last_scheduled, *(t for t in starts if t is not None)])
    last_ready = max([last_started, *(t for t in ready if t is not None)])
    return Milestones(first_created, last_scheduled, last_started, last_ready)


def ready_before(ready: float, started: float) -> bool:
    """Whether a group got ready before a process started at `started` (its predecessor observed it).

    Kubernetes stamps conditions to the second, so a group stamped ready in the second the process
    started may have got there just after it: it counts as after (observed twice across a restart,
    rather than never).
    """
    return ready < math.floor(started)


def observed_time_to_ready(pods: Iterable[Obj]) -> float | None:
    """Median seconds from a group's first pod created to its last pod Ready, over groups whose
    pods are all Ready (keyed by set name and group index); None when no group is."""
    groups: dict[tuple[str, str], list[Obj]] = {}
    for pod in pods:
        labels = labels_of(pod)
        if c.LABEL_GROUP_INDEX in labels:
            groups.setdefault((labels.get(c.LABEL_SET_NAME, ""), labels[c.LABEL_GROUP_INDEX]), []).append(pod)
    durations = []
    for members in groups.values():
        ready = [ready_since(pod) for pod in members]
        created = [parse_time(metadata(pod).get("creationTimestamp")) for pod in members]
        if any(t is None for t in ready) or any(t is None for t in created):
            continue
        last_ready = max(t for t in ready if t is not None)
        first_created = min(t for t in created if t is not None)
        durations.append(max(0.0, (last_ready - first_created).total_seconds()))
    return statistics.median(durations) if durations else None
