"""Drain-aware replacement of a `groupIdentity: Hash` set (docs/disruption-budgets.md): a group on a
cordoned node is replaced through the rollout's surge before its budget lets the drain take it.

The disruption-budget controller decides (core/disruptionbudget/decision.py) and marks the leader of each
group it replaces this way (`leaderworkerset.dev/drain-surge`). The mark is the only state: the LWS
controller adds one leader to the Deployment per marked live group, and the pod controller admits
that many gated leaders over spec.replicas, so both read the same count from the pods they cache.
Once the replacement is Ready the marked group's budget is released like any other, the drain
evicts it, and the count (and the Deployment) falls back with its leader.

The surge is the set's own `maxSurge`: none when it is 0, and none while a rollout may be using it
(a live leader not of the leader Deployment's revision); the budget then releases groups as
before, one budget's worth at a time, and says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget.annotation import budget_groups
from leaderworkerset.core.gocompat.intstr import IntOrPercentError
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.objects import Obj, annotations_of, is_deleting, is_hash, revision_key_of
from leaderworkerset.core.rollout.partition import rollout_budget
from leaderworkerset.core.rollout.revision import hash_patch, revision_patch

NO_SURGE = "maxSurge is 0"
ROLLOUT_USES_SURGE = "a rollout is using the surge"
NOT_HASH = "groupIdentity is not Hash"
MARKED = "true"


def is_drain_surged(leader: Obj) -> bool:
    return annotations_of(leader).get(ext.ANNOTATION_DRAIN_SURGE) == MARKED


def _max_surge(lws: Obj) -> int:
    try:
        return rollout_budget(lws).surge
    except IntOrPercentError:
        return 0  # a bad value is reported by the LWS controller; no surge is taken for a drain


def _rolling(lws: Obj, leaders: list[Obj], deployment: Obj | None) -> bool:
    """A live leader not of the leader Deployment's revision (the set's template when there is no
    Deployment yet): the Deployment is rolling, or about to. Not the UpdateInProgress condition: a
    drain surge itself changes the Deployment's replicas, which reads as an update until the
    Deployment controller has observed it."""
    current = revision_key_of(deployment) if deployment is not None else hash_patch(revision_patch(lws))
    return any(revision_key_of(p) != current for p in leaders)


def surge_allowance(lws: Obj, pods: Iterable[Obj], deployment: Obj | None = None) -> tuple[int, str]:
    """(groups a drain may surge at once, why none when 0) for a set with a disruption budget;
    `deployment` is the set's leader Deployment, if there is one."""
    if not is_hash(lws):
        return 0, NOT_HASH
    surge = _max_surge(lws)
    if surge == 0:
        return 0, NO_SURGE
    leaders = [p for p in pods if is_leader_pod(p) and not is_deleting(p)]
    if _rolling(lws, leaders, deployment):
        return 0, ROLLOUT_USES_SURGE
    return surge, ""


def drain_surged(lws: Obj, pods: Iterable[Obj]) -> int:
    """Extra leaders the Deployment keeps for groups being replaced ahead of a drain: the marked
    live leaders, never more than maxSurge (0 for a set without a valid disruption budget, so a
    mark left behind by a removed annotation changes nothing)."""
    if not is_hash(lws) or budget_groups(lws) is None:
        return 0
    marked = sum(1 for p in pods if is_leader_pod(p) and not is_deleting(p) and is_drain_surged(p))
    return min(marked, _max_surge(lws))


def mark_patch(marked: bool) -> dict[str, Any]:
    """Merge patch of a leader's drain-surge mark."""
    return {"metadata": {"annotations": {ext.ANNOTATION_DRAIN_SURGE: MARKED if marked else None}}}
