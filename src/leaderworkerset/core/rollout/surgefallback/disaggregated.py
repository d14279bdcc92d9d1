"""Capacity-aware surge of a DisaggregatedSet: the same decision as an LWS's
(`core/rollout/surgefallback/decision.py`), read from a DS's rollout.

A DS surges by role: the target revision's child LeaderWorkerSet is scaled up before an old one is
scaled down (`core/disaggregated/planner.py`). Its surge pods are the target children's pods; when
one has been unschedulable for the annotation's seconds, every role rolls without surge
(`core.disaggregated.rollout.without_surge_role`): an old replica drains first and the Pending new one
takes its place. Quiet means every child, old and new, has all its replicas Ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget, role_budget
from leaderworkerset.core.objects import Obj
from leaderworkerset.core.rollout.surgefallback.decision import (
    Signals,
    SurgeCapacity,
    fallback_seconds,
    fallback_since,
    unschedulable_groups,
)


def under_way(children: Sequence[ChildView], revision: str) -> bool:
    """A child of another revision still counts (terminating ones do not, as the executor's)."""
    return any(child.revision != revision and not child.terminating for child in children)


def waiting_children(children: Sequence[ChildView], revision: str) -> list[ChildView]:
    """Target children with replicas not Ready yet: the ones whose pods may be unschedulable."""
    return [
        child
        for child in children
        if child.revision == revision and child.ready_replicas < child.spec_replicas
    ]


def ds_signals(
    ds: Obj,
    *,
    revision: str,
    roles: Sequence[RoleTarget],
    children: Sequence[ChildView],
    pods_by_child: Mapping[str, Sequence[Obj]],
    capacity: SurgeCapacity | None = None,
) -> Signals:
    """The decision's signals for a DS; `pods_by_child` holds the pods of `waiting_children`."""
    seconds = fallback_seconds(ds)
    rolling = under_way(children, revision)
    surging = any(role_budget(role).max_surge > 0 for role in roles)
    blocked = [
        unschedulable
        for child in children
        if child.name in pods_by_child
        for unschedulable in unschedulable_groups(pods_by_child[child.name], 0, where=f"role {child.role}")
    ]
    return Signals(
        seconds=seconds,
        since=fallback_since(ds),
        active=seconds is not None and rolling and surging,
        ended=not rolling,
        blocked=blocked,
        quiet=all(child.ready_replicas >= child.spec_replicas for child in children if not child.terminating),
        step=max((max(role_budget(role).max_unavailable, 1) for role in roles), default=1),
        capacity=capacity,
    )


def role_as_lws(role: Obj) -> Obj:
    """A DS role spec in the shape of an LWS, for the group and node-selector readers."""
    return {"spec": role.get("spec") or {}}


def ds_reads_pods(ds: Obj, children: Sequence[ChildView], revision: str) -> bool:
    """Whether the surge pods' scheduling state is worth a LIST: opted in, rolling, not fallen back
    yet, and a target child has replicas that are not Ready."""
    return (
        fallback_seconds(ds) is not None
        and fallback_since(ds) is None
        and under_way(children, revision)
        and bool(waiting_children(children, revision))
    )
