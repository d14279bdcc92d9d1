"""Reading LeaderWorkerSet objects as the API server returns them: labels, readiness, groups."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from leaderworkerset.api import constants as c
from tests.support.builders import NAME

Obj = dict[str, Any]

# The pods of group 0 of the default LeaderWorkerSet: its leader and its first worker.
LEADER = f"{NAME}-0"
WORKER = f"{NAME}-0-1"


def labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def uid(obj: Obj) -> str:
    return str(obj["metadata"]["uid"])


def is_ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return pod["metadata"].get("deletionTimestamp") is None and any(
        cond["type"] == "Ready" and cond["status"] == "True" for cond in conditions
    )


def is_leader(pod: Obj) -> bool:
    return labels(pod).get(c.LABEL_WORKER_INDEX) == "0"


def ordinals(pod_name: str, name: str = NAME) -> tuple[int, int]:
    """(group, worker) from a pod's name: `<lws>-<group>` leads, `<lws>-<group>-<worker>` works."""
    group, _, worker = pod_name.removeprefix(f"{name}-").partition("-")
    return int(group), int(worker or 0)


def group_of(pod: Obj) -> int:
    return int(labels(pod)[c.LABEL_GROUP_INDEX])


def group_states(pods: list[Obj], size: int) -> dict[int, str]:
    """Each group's state, e.g. ``{0: "ready", 3: "1/2 ready"}`` (whatever its revision)."""
    by_group: dict[int, list[Obj]] = defaultdict(list)
    for pod in pods:
        if c.LABEL_GROUP_INDEX in labels(pod):
            by_group[group_of(pod)].append(pod)
    states = {}
    for group, members in sorted(by_group.items()):
        ready = sum(map(is_ready, members))
        states[group] = "ready" if ready == len(members) == size else f"{ready}/{len(members)} ready"
    return states


def ready_groups(pods: list[Obj], size: int) -> int:
    """Groups whose `size` pods all exist and are Ready (whatever their revision)."""
    return sum(1 for state in group_states(pods, size).values() if state == "ready")
