"""Rolling-update arithmetic of the leader StatefulSet, Ordinal identity.

The LWS controller never replaces groups itself: it moves the leader StatefulSet's `partition`
down and temporarily raises its `replicas` (surge), and the StatefulSet controller recreates the
leader pods above the partition; each new leader then gets a fresh worker StatefulSet. Everything
here decides those two numbers from what is observed, exactly as upstream does, because an
off-by-one either stalls a rollout or violates maxUnavailable.

Vocabulary: R = spec.replicas, S = the leader StatefulSet's current spec.replicas, surge = maxSurge
scaled on R rounding up (capped at R), unavailable = maxUnavailable scaled on R rounding down,
burst = R + surge.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.intstr import IntOrPercentError, IntOrString, scaled_value
from leaderworkerset.core.gocompat.strconv import go_atoi
from leaderworkerset.core.groups.state import MISSING_GROUP, GroupState, group_states
from leaderworkerset.core.objects import (
    ControllerEvent,
    Obj,
    annotations_of,
    lws_replicas,
    lws_size,
    name_of,
    statefulset_partition,
    statefulset_replicas,
)

# Webhook defaults; used when an object skipped admission (e.g. in unit tests).
DEFAULT_MAX_UNAVAILABLE: IntOrString = 1
DEFAULT_MAX_SURGE: IntOrString = 0

# A leader StatefulSet being deleted is left alone and looked at again after this long.
TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS = 5.0


@dataclass(frozen=True)
class RolloutBudget:
    """The rolling-update knobs of one LWS, scaled against spec.replicas."""

    replicas: int
    surge: int
    unavailable: int
    user_partition: int

    @property
    def burst(self) -> int:
        return self.replicas + self.surge

    @property
    def statefulset_max_unavailable(self) -> int:
        """The leader StatefulSet's own maxUnavailable: the StatefulSet must be allowed to take
        down surge groups as well as unavailable ones at once; never below 1 (also covers R=0)."""
        return max(1, self.unavailable + self.surge)


def rolling_update_configuration(lws: Obj) -> Obj:
    config: Obj = ((lws.get("spec") or {}).get("rolloutStrategy") or {}).get(
        "rollingUpdateConfiguration"
    ) or {}
    return config


_ROLLING_UPDATE_PATH = "spec.rolloutStrategy.rollingUpdateConfiguration"


def _scaled_field(value: IntOrString, total: int, round_up: bool, field: str) -> int:
    """`scaled_value` of a rollout knob; the error names the field (the webhook refuses such values,
    but an LWS stored without it reaches the controller, which reports the error on the LWS)."""
    try:
        return scaled_value(value, total, round_up)
    except IntOrPercentError as err:
        raise IntOrPercentError(f"{_ROLLING_UPDATE_PATH}.{field}: {err}") from err


def rollout_budget(lws: Obj) -> RolloutBudget:
    """Scale maxSurge (round up, capped at R) and maxUnavailable (round down) against R."""
    config = rolling_update_configuration(lws)
    replicas = lws_replicas(lws)
    max_surge = config.get("maxSurge")
    max_unavailable = config.get("maxUnavailable")
    surge = _scaled_field(DEFAULT_MAX_SURGE if max_surge is None else max_surge, replicas, True, "maxSurge")
    unavailable = _scaled_field(
        DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable,
        replicas,
        False,
        "maxUnavailable",
    )
    return RolloutBudget(
        replicas=replicas,
        # Surging past R would double the set; upstream caps it.
        surge=min(surge, replicas),
        unavailable=unavailable,
        user_partition=int(config.get("partition") or 0),
    )


# --- the pure arithmetic -------------------------------------------------------------------------


def want_replicas(budget: RolloutBudget, unready: int) -> int:
    """Leader StatefulSet replicas while rolling: keep surge groups only while they are needed.

    While more groups are unready than there are surge slots, the whole burst stays. Once the
    unready groups fit in the surge, keep just enough surge to cover the unready groups that
    exceed maxUnavailable, so surge groups are released one by one as updated groups get ready.
    """
    if unready <= budget.surge:
        return budget.replicas + max(0, unready - budget.unavailable)
    return budget.burst


def unready_count(states: Sequence[GroupState], replicas: int) -> int:
    """Non-surge ordinals [0, R) that are not both ready and updated (missing ones included)."""
    return sum(1 for idx in range(replicas) if idx >= len(states) or not states[idx].ready_and_updated)


def ready_updated_tail(states: Sequence[GroupState]) -> int:
    """How many groups, counting down from the highest ordinal, are ready and updated in a row."""
    count = 0
    for state in reversed(states):
        if not state.ready_and_updated:
            break
        count += 1
    return count


def rolling_update_partition(
    states: Sequence[GroupState], sts_replicas: int, rolling_step: int, current_partition: int
) -> int:
    """The next partition: release up to `rolling_step` more groups for update, never moving up.

    Groups below the step's base that are not ready already consume the unavailability budget, so
    the partition is pushed up by that many. Then it is lowered over groups that are unready or
    already updated (updating them costs no availability), which keeps a rollout moving even when
    maxUnavailable is already violated, e.g. when every group was unready at the start.
    """
    base = max(0, sts_replicas - ready_updated_tail(states) - rolling_step)
    partition = base + sum(1 for idx in range(base) if not states[idx].ready)
    idx = min(partition, sts_replicas - 1)
    while idx >= base:
        state = states[idx]
        if state.ready and not state.updated:
            break
        partition = idx
        idx -= 1
    return min(partition, current_partition)


# --- the decision --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderStatefulSetView:
    """What the rollout reads from the existing leader StatefulSet."""

    replicas: int
    partition: int
    # The `replicas` annotation: spec.replicas of the LWS when the StatefulSet was last applied.
    replicas_annotation: str | None

    @classmethod
    def of(cls, sts: Obj) -> "LeaderStatefulSetView":
        return cls(
            replicas=statefulset_replicas(sts),
            partition=statefulset_partition(sts),
            replicas_annotation=annotations_of(sts).get(c.ANNOTATION_REPLICAS),
        )


@dataclass(frozen=True)
class RolloutDecision:
    """Partition and replicas to apply on the leader StatefulSet, plus events to record."""

    partition: int
    replicas: int
    events: tuple[ControllerEvent, ...] = ()


def surge_reclaim_events(lws_name: str, current_replicas: int, wanted: int) -> tuple[ControllerEvent, ...]:
    """GroupsProgressing events announcing that surge ordinals [wanted, current) go away."""
    if wanted >= current_replicas:
        return ()
    if wanted == current_replicas - 1:
        message = c.MSG_DELETING_SURGE_REPLICA % (lws_name, wanted)
    else:
        message = c.MSG_DELETING_SURGE_REPLICAS % (lws_name, wanted, lws_name, current_replicas - 1)
    return (ControllerEvent(c.EVENT_TYPE_NORMAL, c.EVENT_GROUPS_PROGRESSING, c.EVENT_ACTION_DELETE, message),)


def _with_floor(decision: RolloutDecision, budget: RolloutBudget) -> RolloutDecision:
    # The user's partition is a floor under whatever the arithmetic says.
    return RolloutDecision(max(decision.partition, budget.user_partition), decision.replicas, decision.events)


def plan_rollout(
    *,
    lws_name: str,
    budget: RolloutBudget,
    size: int,
    sts: LeaderStatefulSetView | None,
    revision_key: str,
    revision_created: bool,
    leader_pods: Iterable[Obj] = (),
    statefulsets: Iterable[Obj] = (),
) -> RolloutDecision:
    """`(partition, replicas)` for the leader StatefulSet, the user partition applied last.

    `leader_pods` are the pods labelled `{name, worker-index=0}`; `statefulsets` every StatefulSet
    labelled `{name}` (the leader StatefulSet drops out: it has no group index). They are only
    read mid-rollout. Raises GoParseError when the `replicas` annotation is missing or not an
    integer on the path that reads it — upstream fails the reconcile the same way.
    """

    def observed_states(sts_replicas: int) -> list[GroupState]:
        return group_states(
            lws_name=lws_name,
            sts_replicas=sts_replicas,
            size=size,
            revision_key=revision_key,
            leader_pods=leader_pods,
            statefulsets=statefulsets,
        )

    return _with_floor(_plan(lws_name, budget, sts, revision_created, observed_states), budget)


def _plan(
    lws_name: str,
    budget: RolloutBudget,
    sts: LeaderStatefulSetView | None,
    revision_created: bool,
    states_of: Callable[[int], list[GroupState]],
) -> RolloutDecision:
    """`plan_rollout` without the user-partition floor; `states_of(S)` gives the per-ordinal
    group states, read only mid-rollout."""
    replicas = budget.replicas
    if sts is None:
        # Fresh StatefulSet: every pod is created at once from the current template.
        return RolloutDecision(0, replicas)

    def decide(partition: int, unready: int) -> RolloutDecision:
        wanted = want_replicas(budget, unready)
        return RolloutDecision(partition, wanted, surge_reclaim_events(lws_name, sts.replicas, wanted))

    if revision_created:
        # A new template: freeze every existing ordinal; a simultaneous scale-up is applied first
        # (the new ordinals start on the new template), a scale-down starts together with the update.
        partition = min(replicas, sts.replicas)
        if sts.replicas < replicas:
            return RolloutDecision(partition, replicas)
        return decide(partition, replicas)
    if sts.partition == 0 and sts.replicas == replicas:
        return RolloutDecision(0, replicas)
    if sts.replicas < replicas:
        # Scale-up still being applied: let it finish before moving the partition.
        return RolloutDecision(sts.partition, replicas)

    states = states_of(sts.replicas)
    unready = unready_count(states, replicas)
    previous_replicas = go_atoi(sts.replicas_annotation if sts.replicas_annotation is not None else "")
    if previous_replicas != replicas:
        # spec.replicas changed mid-rollout: hold the partition (clamped to the new burst).
        return decide(min(sts.partition, budget.burst), unready)

    # Surge groups that were already reclaimed no longer cover for unavailable ones.
    rolling_step = budget.unavailable + budget.surge - (budget.burst - sts.replicas)
    return decide(rolling_update_partition(states, sts.replicas, rolling_step, sts.partition), unready)


def plan_rollout_for(
    lws: Obj,
    leader_sts: Obj | None,
    *,
    revision_key: str,
    revision_created: bool,
    leader_pods: Iterable[Obj] = (),
    statefulsets: Iterable[Obj] = (),
) -> RolloutDecision:
    """`plan_rollout` reading its inputs from the LWS and leader StatefulSet dicts."""
    return plan_rollout(
        lws_name=name_of(lws),
        budget=rollout_budget(lws),
        size=lws_size(lws),
        sts=None if leader_sts is None else LeaderStatefulSetView.of(leader_sts),
        revision_key=revision_key,
        revision_created=revision_created,
        leader_pods=leader_pods,
        statefulsets=statefulsets,
    )


def after_apply_events(
    *,
    lws_name: str,
    previous: LeaderStatefulSetView | None,
    partition: int,
    revision_created: bool,
    revision_name: str | None = None,
) -> tuple[ControllerEvent, ...]:
    """Events to record once the leader StatefulSet was applied successfully.

    Creation is announced as progress; a partition move (outside the reconcile that created a
    revision) names the ordinals released for update, inclusive. Upstream relates both events to
    the current ControllerRevision, named by `revision_name`.
    """
    related = None if revision_name is None else ("ControllerRevision", revision_name)
    if previous is None:
        message = c.MSG_CREATED_LEADER_STS % lws_name
        return (
            ControllerEvent(
                c.EVENT_TYPE_NORMAL, c.EVENT_GROUPS_PROGRESSING, c.EVENT_ACTION_CREATE, message, related
            ),
        )
    if revision_created or partition == previous.partition:
        return ()
    if previous.partition - 1 == partition:
        message = c.MSG_UPDATING_REPLICA % partition
    else:
        message = c.MSG_UPDATING_REPLICAS % (partition, previous.partition - 1)
    return (
        ControllerEvent(
            c.EVENT_TYPE_NORMAL, c.EVENT_GROUPS_UPDATING, c.EVENT_ACTION_UPDATE, message, related
        ),
    )


# --- dry run (`lws plan`) --------------------------------------------------------------------------

GROUP_READY = "ready"  # on the new revision and ready
GROUP_UPDATING = "updating"  # on the new revision, not ready yet
GROUP_OUTDATED = "outdated"  # still on the old revision
GROUP_OUTDATED_UNREADY = "outdated-unready"  # on the old revision and not ready (a live start only)


@dataclass(frozen=True)
class RolloutStep:
    """One reconcile of a simulated rollout: what the controller applied, the groups per ordinal
    once the StatefulSet controller acted on it, and the events recorded."""

    partition: int
    replicas: int
    groups: tuple[str, ...]
    events: tuple[str, ...]


def simulate_rollout(
    budget: RolloutBudget,
    *,
    lws_name: str = "lws",
    current_replicas: int | None = None,
    max_steps: int = 1000,
    observed: Sequence[GroupState] | None = None,
    statefulset: LeaderStatefulSetView | None = None,
    revision_created: bool = True,
) -> list[RolloutStep]:
    """The steps a template change takes, starting from `current_replicas` ready groups (default:
    spec.replicas, i.e. no simultaneous scale) on the old revision.

    `observed` (per leader-StatefulSet ordinal, as `group_states` reads them) and `statefulset`
    start it from a live set instead, e.g. one already mid-rollout; with `revision_created`
    False no new template arrives and the simulation only finishes what is under way.

    Assumes every group being updated becomes ready before the next reconcile: the fastest
    rollout the arithmetic allows. Real readiness delays only add waiting steps in between.
    """
    # ordinal -> (updated, ready); by default the StatefulSet starts steady at the old size.
    if observed is None:
        size = budget.replicas if current_replicas is None else current_replicas
        groups = {o: (False, True) for o in range(size)}
    else:
        # A new revision makes every existing group outdated, whatever it was before.
        groups = {
            o: (state.updated and not revision_created, state.ready) for o, state in enumerate(observed)
        }
    sts = statefulset or LeaderStatefulSetView(len(groups), 0, str(len(groups)))
    steps: list[RolloutStep] = []
    for reconcile in range(max_steps):

        def states_of(sts_replicas: int) -> list[GroupState]:
            return [
                GroupState(ready=groups[o][1], updated=groups[o][0]) if o in groups else MISSING_GROUP
                for o in range(sts_replicas)
            ]

        created = revision_created and reconcile == 0
        decision = _with_floor(_plan(lws_name, budget, sts, created, states_of), budget)
        before = dict(groups)
        _statefulset_controller(groups, decision)
        step = RolloutStep(
            decision.partition,
            decision.replicas,
            _group_row(groups),
            tuple(e.message for e in decision.events),
        )
        if steps and groups == before and step == replace(steps[-1], events=()):
            return steps  # nothing moved: the rollout is over (or held by the user's partition)
        steps.append(step)
        sts = LeaderStatefulSetView(decision.replicas, decision.partition, str(budget.replicas))
        groups.update({o: (True, True) for o, (updated, _) in groups.items() if updated})
    raise RuntimeError(f"rollout did not settle within {max_steps} reconciles")


def _statefulset_controller(groups: dict[int, tuple[bool, bool]], decision: RolloutDecision) -> None:
    """What the StatefulSet controller does with (partition, replicas): remove ordinals above
    replicas, create missing ones, and recreate outdated ones at or above the partition."""
    for ordinal in [o for o in groups if o >= decision.replicas]:
        del groups[ordinal]
    for ordinal in range(decision.replicas):
        updated, _ = groups.get(ordinal, (False, False))
        if ordinal not in groups or (ordinal >= decision.partition and not updated):
            groups[ordinal] = (ordinal >= decision.partition, False)


def _group_row(groups: Mapping[int, tuple[bool, bool]]) -> tuple[str, ...]:
    def label(updated: bool, ready: bool) -> str:
        if not updated:
            return GROUP_OUTDATED if ready else GROUP_OUTDATED_UNREADY
        return GROUP_READY if ready else GROUP_UPDATING

    return tuple(label(*groups[o]) for o in sorted(groups))
