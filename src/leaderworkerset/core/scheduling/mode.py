"""Which gang-scheduling mode a LeaderWorkerSet's ``spec.scheduling`` asks for."""

from __future__ import annotations

from typing import Any

from leaderworkerset.api import constants as c

SCHEDULING_LEVEL_FIELDS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode")


def _present(obj: object, key: str) -> bool:
    return isinstance(obj, dict) and obj.get(key) is not None


def _child(obj: object, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _list(obj: object, key: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, list) else []


class SchedulingModeError(ValueError):
    pass


def _level_active(level: dict[str, Any]) -> bool:
    return any(_present(level, name) for name in SCHEDULING_LEVEL_FIELDS) or bool(
        _list(level, "resourceClaims")
    )


def scheduling_mode(scheduling: dict[str, Any], scheduling_set: bool = True) -> str:
    """The single active level; replica when nothing is set (so `scheduling: {}` means per replica)."""
    if not scheduling_set:
        raise SchedulingModeError("spec.scheduling is not configured")
    replica_set = _present(scheduling, "replica")
    replica = _child(scheduling, "replica")
    role_active = _present(replica, "leader") or _present(replica, "worker")
    active = []
    if _level_active(scheduling):
        active.append(c.SCHEDULING_MODE_LWS)
    if _level_active(replica) or (replica_set and not role_active):
        active.append(c.SCHEDULING_MODE_REPLICA)
    if role_active:
        active.append(c.SCHEDULING_MODE_ROLE)
    if not active:
        return c.SCHEDULING_MODE_REPLICA
    if len(active) != 1:
        raise SchedulingModeError(
            f"phase 1 requires exactly one active scheduling level, got [{' '.join(active)}]"
        )
    return active[0]
