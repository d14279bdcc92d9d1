"""One rolling-update decision of an Ordinal LWS: upstream's step, then the opt-in rollout control.

The controller gathers everything a round needs from its caches first (`RolloutInputs`), asks
`decide_rollout_round` once, and applies the answer. `reads_pods` says beforehand whether the
decision will look at every pod of the set: only a progress-deadline check does (the last progress
and the stalled group's diagnosis read workers), and converting every pod on every round would be
the largest cost of a steady set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.naming import leader_pod_name
from leaderworkerset.core.groups.state import group_states, is_leader_pod
from leaderworkerset.core.objects import (
    Obj,
    labels_of,
    lws_replicas,
    lws_size,
    name_of,
    revision_key_of,
    statefulset_partition,
)
from leaderworkerset.core.observe.diagnosis import Diagnosis, diagnose_group
from leaderworkerset.core.rollout.control import (
    RolloutControl,
    Stall,
    check_deadline,
    held_decision,
    last_progress,
    waiting_ordinals,
)
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    RolloutDecision,
    plan_rollout,
    plan_rollout_for,
    rollout_budget,
)
from leaderworkerset.core.rollout.revision import owned_revisions
from leaderworkerset.core.rollout.surgefallback.decision import fallback_decision


def rollout_under_way(lws: Obj, revisions: Sequence[Obj], current_key: str) -> bool:
    """The set still has a ControllerRevision of another template: a rollout is in progress."""
    return any(revision_key_of(r) != current_key for r in owned_revisions(lws, revisions))


def reads_pods(
    control: RolloutControl, *, leader_sts: Obj | None, revision_created: bool, under_way: bool
) -> bool:
    """Whether `decide_rollout_round` will check the progress deadline (and so read every pod)."""
    if leader_sts is None or control.paused or control.deadline_seconds is None:
        return False
    return under_way and not revision_created


@dataclass(frozen=True)
class RolloutInputs:
    """What one round read from the caches for its rolling-update decision."""

    lws: Obj
    leader_sts: Obj | None
    revision: Obj | None
    revision_key: str
    revision_created: bool
    control: RolloutControl
    under_way: bool
    leader_pods: Sequence[Obj] = ()  # read only when the leader StatefulSet exists
    statefulsets: Sequence[Obj] = ()  # likewise
    pods: Sequence[Obj] = ()  # every pod of the set, read only when `reads_pods`
    # Capacity-aware surge (core/rollout/surgefallback/) gave the surge back: replace without surge.
    without_surge: bool = False
    # In-place updates (core/rollout/inplaceupdate/, the round's `InPlacePlan`): `in_place_hold`,
    # groups wait for their update in place, so the partition stays at the replicas; `in_place_keep`,
    # the StatefulSet controller has not counted every leader updated in place, so it is not lowered.
    in_place_hold: bool = False
    in_place_keep: bool = False


@dataclass(frozen=True)
class RolloutRound:
    """The `(partition, replicas)` to apply, why it is held (past the deadline), and when to look again."""

    decision: RolloutDecision
    stall: Stall | None = None
    requeue_after: float | None = None


def decide_rollout_round(inputs: RolloutInputs, now: datetime) -> RolloutRound:
    """Upstream's rolling-update step, held where the StatefulSet already is while the rollout is
    paused or past its progress deadline (pause and deadline are opt-in annotations), and where
    an in-place update needs the partition (`in_place_partition`)."""
    outcome = _controlled_round(inputs, now)
    return replace(outcome, decision=in_place_partition(outcome.decision, inputs))


def in_place_partition(decision: RolloutDecision, inputs: RolloutInputs) -> RolloutDecision:
    """The decision as an in-place update of the set's groups needs it: while groups wait for theirs,
    the StatefulSet controller replaces none and no surge group is needed (the step's events, a
    partition move, do not happen); until it has counted the leaders updated in place, a lowered
    partition could make it replace one, so the partition stays where it is this round."""
    if inputs.in_place_hold:
        replicas = lws_replicas(inputs.lws)
        return RolloutDecision(partition=replicas, replicas=replicas)
    if inputs.in_place_keep and inputs.leader_sts is not None:
        current = statefulset_partition(inputs.leader_sts)
        if decision.partition < current:
            return RolloutDecision(partition=current, replicas=decision.replicas)
    return decision


def _controlled_round(inputs: RolloutInputs, now: datetime) -> RolloutRound:
    """Upstream's step under rollout control (pause, progress deadline)."""
    lws, control = inputs.lws, inputs.control
    decision = _step(inputs)
    if inputs.leader_sts is None or (not control.paused and control.deadline_seconds is None):
        return RolloutRound(decision)
    sts = LeaderStatefulSetView.of(inputs.leader_sts)
    budget = rollout_budget(lws)

    def held() -> RolloutDecision:
        return held_decision(
            decision, lws_name=name_of(lws), sts=sts, budget=budget, revision_created=inputs.revision_created
        )

    if control.paused:
        return RolloutRound(held())
    if inputs.revision_created or not inputs.under_way:
        return RolloutRound(decision)  # a new template starts a fresh step; no rollout, no deadline
    states = group_states(
        lws_name=name_of(lws),
        sts_replicas=sts.replicas,
        size=lws_size(lws),
        revision_key=inputs.revision_key,
        leader_pods=inputs.leader_pods,
        statefulsets=inputs.statefulsets,
    )
    waiting = waiting_ordinals(states, budget)
    since = last_progress(
        revision=inputs.revision,
        revision_key=inputs.revision_key,
        pods=inputs.pods,
        conditions=(lws.get("status") or {}).get("conditions") or [],
    )
    check = check_deadline(
        seconds=control.deadline_seconds, under_way=inputs.under_way, waiting=waiting, since=since, now=now
    )
    if not check.exceeded:
        return RolloutRound(decision, requeue_after=check.requeue_after)
    stall = Stall(waiting[0], len(waiting), int(control.deadline_seconds or 0), _diagnose(inputs, waiting[0]))
    return RolloutRound(held(), stall, check.requeue_after)


def _step(inputs: RolloutInputs) -> RolloutDecision:
    """Upstream's step, or the step without surge while the surge is given back."""
    if not inputs.without_surge or inputs.leader_sts is None:
        return plan_rollout_for(
            inputs.lws,
            inputs.leader_sts,
            revision_key=inputs.revision_key,
            revision_created=inputs.revision_created,
            leader_pods=inputs.leader_pods,
            statefulsets=inputs.statefulsets,
        )
    lws = inputs.lws

    def plan(budget: RolloutBudget, sts: LeaderStatefulSetView) -> RolloutDecision:
        return plan_rollout(
            lws_name=name_of(lws),
            budget=budget,
            size=lws_size(lws),
            sts=sts,
            revision_key=inputs.revision_key,
            revision_created=inputs.revision_created,
            leader_pods=inputs.leader_pods,
            statefulsets=inputs.statefulsets,
        )

    return fallback_decision(
        plan,
        lws_name=name_of(lws),
        budget=rollout_budget(lws),
        sts=LeaderStatefulSetView.of(inputs.leader_sts),
    )


def _diagnose(inputs: RolloutInputs, ordinal: int) -> Diagnosis | None:
    """Why the first group the rollout waits on is not ready (the stall's reason and message)."""
    name = leader_pod_name(name_of(inputs.lws), ordinal)
    return diagnose_group(
        lws=inputs.lws,
        leader=next((p for p in inputs.pods if is_leader_pod(p) and name_of(p) == name), None),
        worker_sts=next((s for s in inputs.statefulsets if name_of(s) == name), None),
        pods=[p for p in inputs.pods if labels_of(p).get(c.LABEL_GROUP_INDEX) == str(ordinal)],
        failures={},
    )
