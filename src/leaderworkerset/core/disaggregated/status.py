"""DisaggregatedSet status: per-role counts and Available/Progressing.

Counts sum every child of the role over all slices and revisions; only children at the target
revision contribute `updatedReplicas`. The DS is Available when every role has replicas == ready
== updated == desired * slices and every External role has a scaler. Unlike the LWS conditions,
the pair is rewritten on every change: the condition set True carries the reason and message, the
other one is False with the same reason and message, and lastTransitionTime only moves when a
status flips.
"""

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import Condition, format_time
from leaderworkerset.core.disaggregated.children import status_count
from leaderworkerset.core.disaggregated.naming import revision_of, role_of
from leaderworkerset.core.objects import Obj, metadata

_EXCLUSIVE = frozenset({c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING})


def role_statuses(roles: Sequence[str], children: Sequence[Obj], revision: str) -> list[dict[str, Any]]:
    statuses = []
    for role in roles:
        mine = [lws for lws in children if role_of(lws) == role]
        counts = {
            "replicas": sum(status_count(lws, "replicas") for lws in mine),
            "readyReplicas": sum(status_count(lws, "readyReplicas") for lws in mine),
            "updatedReplicas": sum(
                status_count(lws, "updatedReplicas") for lws in mine if revision_of(lws) == revision
            ),
        }
        # Go omits zero counts (omitempty), so the stored form never carries them either.
        statuses.append({"name": role, **{key: value for key, value in counts.items() if value}})
    return statuses


def is_available(statuses: Sequence[Mapping[str, Any]], targets: Mapping[str, int], slices: int) -> bool:
    for status in statuses:
        per_slice = targets.get(str(status["name"]))
        if per_slice is None:
            return False
        desired = per_slice * slices
        counts = (status.get(key, 0) for key in ("replicas", "readyReplicas", "updatedReplicas"))
        if any(count != desired for count in counts):
            return False
    return True


def desired_condition(available: bool, unresolved: Sequence[str], generation: int) -> Condition:
    condition_type, reason, message = (
        c.CONDITION_PROGRESSING,
        c.REASON_ROLLOUT_IN_PROGRESS,
        c.MESSAGE_ROLLOUT_IN_PROGRESS,
    )
    if unresolved:
        reason = c.REASON_REPLICA_TARGETS_UNRESOLVED
        message = c.MESSAGE_REPLICA_TARGETS_UNRESOLVED_PREFIX + ", ".join(unresolved)
    elif available:
        condition_type, reason, message = (
            c.CONDITION_AVAILABLE,
            c.REASON_ALL_ROLES_READY,
            c.MESSAGE_ALL_ROLES_READY,
        )
    return {
        "type": condition_type,
        "status": c.CONDITION_TRUE,
        "observedGeneration": generation,
        "reason": reason,
        "message": message,
    }


def _set_condition(conditions: list[Condition], new: Condition, now: datetime) -> bool:
    """Merge `new` (a True condition) in place, flipping its exclusive partner; True if changed."""
    stamp = format_time(now)
    changed = found = False
    for i, current in enumerate(conditions):
        if current.get("type") == new["type"]:
            found = True
            if current.get("status") != new["status"]:
                conditions[i] = {**new, "lastTransitionTime": stamp}
                changed = True
            elif any(current.get(k) != new[k] for k in ("observedGeneration", "reason", "message")):
                conditions[i] = {
                    **current,
                    **{k: new[k] for k in ("observedGeneration", "reason", "message")},
                }
                changed = True
        elif frozenset({current.get("type"), new["type"]}) == _EXCLUSIVE:
            if current.get("status") == c.CONDITION_TRUE:
                conditions[i] = {
                    **current,
                    "status": c.CONDITION_FALSE,
                    "lastTransitionTime": stamp,
                    "observedGeneration": new["observedGeneration"],
                    "reason": new["reason"],
                    "message": new["message"],
                }
                changed = True
            elif current.get("observedGeneration") != new["observedGeneration"]:
                conditions[i] = {**current, "observedGeneration": new["observedGeneration"]}
                changed = True
    if not found:
        conditions.append({**new, "lastTransitionTime": stamp})
        changed = True
    return changed


@dataclass(frozen=True)
class DsStatusPlan:
    status: dict[str, Any]
    changed: bool
    available: bool


def plan_ds_status(
    ds: Obj,
    children: Sequence[Obj],
    revision: str,
    targets: Mapping[str, int],
    unresolved: Sequence[str],
    slices: int,
    now: datetime,
) -> DsStatusPlan:
    """The status to write (all of it) and whether it differs from the stored one."""
    roles = [str(role.get("name")) for role in (ds.get("spec") or {}).get("roles") or []]
    stored: dict[str, Any] = copy.deepcopy(dict(ds.get("status") or {}))
    generation = int(metadata(ds).get("generation") or 0)
    statuses = role_statuses(roles, children, revision)
    available = not unresolved and is_available(statuses, targets, slices)
    changed = (stored.get("roleStatuses") or []) != statuses
    conditions: list[Condition] = list(stored.get("conditions") or [])
    changed = _set_condition(conditions, desired_condition(available, unresolved, generation), now) or changed
    if int(stored.get("observedGeneration") or 0) != generation:
        changed = True
    status = {**stored, "observedGeneration": generation, "roleStatuses": statuses, "conditions": conditions}
    return DsStatusPlan(status=status, changed=changed, available=available)
