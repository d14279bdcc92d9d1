"""`lws plan` for a LeaderWorkerSet: the controller's rolling update simulated, or the in-place
update's batches, or a scale without a rollout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import MISSING_GROUP, GroupState, group_states
from leaderworkerset.core.objects import (
    Obj,
    is_hash,
    lws_replicas,
    lws_size,
    metadata,
    statefulset_replicas,
)
from leaderworkerset.core.plan.steps import (
    ChangeKind,
    Plan,
    PlanStep,
    capacity_pct,
    empty_plan,
    finish_plan,
    with_spec,
)
from leaderworkerset.core.rollout import partition as lws_rollout
from leaderworkerset.core.rollout.control import rollout_control, rollout_notes
from leaderworkerset.core.rollout.inplaceupdate import planning
from leaderworkerset.core.rollout.inplaceupdate.classification import (
    Classification,
    UpdatePath,
    classify_specs,
    in_place_reasons,
    path_words,
)
from leaderworkerset.core.rollout.leaderreplacement import emulation_note
from leaderworkerset.core.rollout.revision import RevisionMatchCache, plan_revision
from leaderworkerset.core.rollout.surgefallback.decision import without_surge_budget
from leaderworkerset.core.scheduling.accelerators import Accelerators, _add, group_accelerators
from leaderworkerset.core.scheduling.surgefallback import SurgePath, surge_path

_OLD = (lws_rollout.GROUP_OUTDATED, lws_rollout.GROUP_OUTDATED_UNREADY)
_READY = (lws_rollout.GROUP_OUTDATED, lws_rollout.GROUP_READY)


def _lws_row_step(
    previous: Sequence[str],
    row: Sequence[str],
    replicas: int,
    old_group: Mapping[str, int],
    new_group: Mapping[str, int],
    baseline: Mapping[str, int],
) -> PlanStep:
    down = [
        str(o) for o, state in enumerate(previous) if o >= len(row) or (state in _OLD and row[o] not in _OLD)
    ]
    up = [
        str(o)
        for o, state in enumerate(row)
        if state == lws_rollout.GROUP_UPDATING and (o >= len(previous) or previous[o] != state)
    ]
    ready = sum(1 for state in row if state in _READY)
    old = sum(1 for state in row if state in _OLD)
    in_use: Accelerators = {}
    _add(in_use, old_group, old)
    _add(in_use, new_group, len(row) - old)
    extra = {name: in_use.get(name, 0) - baseline.get(name, 0) for name in sorted({*in_use, *baseline})}
    return PlanStep(
        down=tuple(down),
        up=tuple(up),
        capacity=(("groups", capacity_pct(ready, replicas)),),
        extra_accelerators={name: count for name, count in extra.items() if count},
        updated=len(row) - old,
        old=old,
        waits_for_ready=lws_rollout.GROUP_UPDATING in row,
    )


def _live_row(observed: Sequence[GroupState] | None, groups: int, new_revision: bool) -> tuple[str, ...]:
    """The live groups in the simulation's vocabulary (a new revision outdates every group)."""
    if observed is None:
        return (lws_rollout.GROUP_OUTDATED,) * groups
    row = []
    for state in observed:
        if new_revision or not state.updated:
            row.append(lws_rollout.GROUP_OUTDATED if state.ready else lws_rollout.GROUP_OUTDATED_UNREADY)
        else:
            row.append(lws_rollout.GROUP_READY if state.ready else lws_rollout.GROUP_UPDATING)
    return tuple(row)


def plan_leaderworkerset(
    live: Obj,
    new: Obj,
    *,
    leader_statefulset: Obj | None,
    revisions: Sequence[Obj],
    leader_pods: Sequence[Obj] | None = None,
    statefulsets: Sequence[Obj] = (),
    time_to_ready: float | None = None,
    free: Mapping[str, int] | None = None,
    free_by_node: Mapping[str, Accelerators] | None = None,
    resizes_in_place: bool = False,
) -> Plan:
    """The plan for applying `new` (as the API server would store it) over `live`.

    `leader_statefulset` is the live leader StatefulSet (None: the controller has not created it
    yet, so nothing rolls), `revisions` the ControllerRevisions of the namespace. `leader_pods`
    and `statefulsets` (the set's worker StatefulSets) give the live groups, read as the
    controller reads them; without them every live group is taken as ready on the live revision.
    """
    proposed = with_spec(live, new)
    base = empty_plan(c.LWS_KIND, live, free, time_to_ready)
    if is_hash(proposed):
        return hash_identity_plan(base)
    revision = plan_revision(proposed, leader_statefulset, revisions, RevisionMatchCache())
    budget = lws_rollout.rollout_budget(proposed)
    groups = live_groups(
        live,
        leader_statefulset,
        leader_pods=leader_pods,
        statefulsets=statefulsets,
        revision_key=revision.key,
    )
    old_group, new_group = group_accelerators(live), group_accelerators(proposed)
    if not revision.updated and not unfinished_rollout(groups, budget):
        return scale_plan(base, live, proposed, budget, groups.count, old_group)
    in_place_note = None
    if revision.updated and planning.wants_in_place_update(proposed):
        in_place = classify_specs(
            live.get("spec") or {}, proposed.get("spec") or {}, resizes_in_place=resizes_in_place
        )
        if in_place.in_place:
            return finish_plan(_in_place_plan(base, in_place, budget), _in_place_steps(budget))
        reasons = "; ".join(in_place.reasons(UpdatePath.RECREATE))
        in_place_note = f"recreate path (update-strategy {ext.UPDATE_STRATEGY_IN_PLACE}): {reasons}"
    path = surge_path(live, proposed, budget, free_by_node)
    steps_budget, start = rollout_start(groups, budget, without_surge=path.without_surge)
    simulated = lws_rollout.simulate_rollout(
        steps_budget,
        lws_name=base.name,
        current_replicas=start.count,
        observed=start.observed,
        statefulset=start.statefulset,
        revision_created=revision.updated,
    )
    steps = rollout_steps(simulated, start, budget.replicas, old_group, new_group, revision.updated)
    # The StatefulSets of this cluster ignore maxUnavailable: the controller replaces the groups.
    notes = (in_place_note, path.note, emulation_note(proposed, leader_statefulset))
    plan = replace(
        base,
        change="rollout",
        summary=rollout_summary(budget, new_revision=revision.updated),
        warnings=rollout_warnings(live, proposed, budget, simulated, path),
        notes=tuple(note for note in notes if note is not None),
    )
    return finish_plan(plan, steps)


def hash_identity_plan(base: Plan) -> Plan:
    """A Hash set rolls through its leader Deployment: no step plan."""
    return replace(
        base,
        change="no rollout",
        summary="Hash group identity: the leader Deployment's rolling update orders the groups "
        "(kube-controller-manager), so no step plan is computed",
        warnings=("no step plan for groupIdentity Hash",),
    )


@dataclass(frozen=True)
class LiveGroups:
    """The live groups a rollout starts from, as the controller reads them."""

    count: int  # the leader StatefulSet's replicas (the set's before the StatefulSet exists)
    observed: Sequence[GroupState] | None = None  # None: every group taken as ready on its revision
    statefulset: lws_rollout.LeaderStatefulSetView | None = None


def live_groups(
    live: Obj,
    leader_statefulset: Obj | None,
    *,
    leader_pods: Sequence[Obj] | None,
    statefulsets: Sequence[Obj],
    revision_key: str,
) -> LiveGroups:
    if leader_statefulset is None:
        return LiveGroups(lws_replicas(live))
    count = statefulset_replicas(leader_statefulset)
    if leader_pods is None:
        return LiveGroups(count)
    view = lws_rollout.LeaderStatefulSetView.of(leader_statefulset)
    observed = group_states(
        lws_name=str(metadata(live).get("name", "")),
        sts_replicas=view.replicas,
        size=lws_size(live),
        revision_key=revision_key,
        leader_pods=leader_pods,
        statefulsets=statefulsets,
    )
    return LiveGroups(count, observed, view)


def unfinished_rollout(groups: LiveGroups, budget: lws_rollout.RolloutBudget) -> bool:
    """A rollout already under way: surge still up, or groups left on an older revision."""
    view = groups.statefulset
    return view is not None and (
        view.replicas > budget.replicas
        or any(state != MISSING_GROUP and not state.updated for state in groups.observed or ())
    )


def scale_plan(
    base: Plan,
    live: Obj,
    proposed: Obj,
    budget: lws_rollout.RolloutBudget,
    current_groups: int,
    old_group: Accelerators,
) -> Plan:
    """No new template and no rollout left: nothing changes, or the groups are only scaled."""
    if budget.replicas == current_groups:
        same = (live.get("spec") or {}) == (proposed.get("spec") or {})
        change: ChangeKind = "no change" if same else "no rollout"
        summary = "nothing changes" if same else "the change does not alter the group template"
        return finish_plan(replace(base, change=change, summary=summary), [])
    grow = budget.replicas > current_groups
    extra: Accelerators = {}
    _add(extra, old_group, budget.replicas - current_groups)
    scaled = PlanStep(
        down=() if grow else tuple(str(o) for o in range(budget.replicas, current_groups)),
        up=tuple(str(o) for o in range(current_groups, budget.replicas)),
        capacity=(("groups", capacity_pct(min(current_groups, budget.replicas), budget.replicas)),),
        extra_accelerators={name: count for name, count in extra.items() if count},
        updated=0,
        old=budget.replicas,
        waits_for_ready=grow,
    )
    summary = f"{current_groups} → {budget.replicas} groups, no group is recreated"
    return finish_plan(replace(base, change="scale only", summary=summary), [scaled])


def rollout_start(
    groups: LiveGroups, budget: lws_rollout.RolloutBudget, *, without_surge: bool
) -> tuple[lws_rollout.RolloutBudget, LiveGroups]:
    """The budget the simulation runs with and the groups it starts from: without surge, the
    controller's step gives the surge back first, so the simulation starts without it."""
    if not without_surge:
        return budget, groups
    view = groups.statefulset
    start = LiveGroups(
        count=min(groups.count, budget.replicas),
        observed=None if groups.observed is None else groups.observed[: budget.replicas],
        statefulset=None if view is None else replace(view, replicas=min(view.replicas, budget.replicas)),
    )
    return without_surge_budget(budget), start


def rollout_steps(
    simulated: Sequence[lws_rollout.RolloutStep],
    start: LiveGroups,
    replicas: int,
    old_group: Accelerators,
    new_group: Accelerators,
    new_revision: bool,
) -> list[PlanStep]:
    """The simulated rounds that move a group, each with its capacity and extra accelerators (the
    baseline: what the starting groups hold; Pending surge groups given back hold none)."""
    baseline: Accelerators = {}
    _add(baseline, old_group, start.count)
    steps, previous = [], _live_row(start.observed, start.count, new_revision)
    for sim in simulated:
        step = _lws_row_step(previous, sim.groups, replicas, old_group, new_group, baseline)
        # Reconciles that only wait for readiness (or freeze the StatefulSet) move no group.
        if step.down or step.up:
            steps.append(step)
        previous = sim.groups
    return steps


def rollout_summary(budget: lws_rollout.RolloutBudget, *, new_revision: bool) -> str:
    summary = (
        f"rolling update of {budget.replicas} groups: maxSurge {budget.surge}, maxUnavailable "
        f"{budget.unavailable}, partition {budget.user_partition}"
    )
    if not new_revision:
        summary = "a rollout is under way, no new template: its remaining steps; " + summary
    if budget.user_partition:
        summary += f"; groups below {budget.user_partition} stay on the old revision"
    return summary


def rollout_warnings(
    live: Obj,
    proposed: Obj,
    budget: lws_rollout.RolloutBudget,
    simulated: Sequence[lws_rollout.RolloutStep],
    path: SurgePath,
) -> tuple[str, ...]:
    """What stands in the way of the steps: rollout control (the steps are the controller's, but
    it does not take them now), surge groups the partition keeps up, a surge the nodes lack."""
    warnings: tuple[str, ...] = tuple(rollout_notes(live))
    if rollout_control(proposed).paused and not any(w.startswith("rollout paused") for w in warnings):
        warnings += ("rollout paused: the controller takes none of these steps until `lws rollout resume`",)
    held = len(simulated[-1].groups) - budget.replicas if simulated else 0
    if held > 0:
        warnings += (
            f"{held} surge group(s) stay up after the last step: the partition keeps old groups, "
            "so the controller never releases the surge",
        )
    return warnings + (() if path.warning is None else (path.warning,))


def _in_place_plan(base: Plan, change: Classification, budget: lws_rollout.RolloutBudget) -> Plan:
    words = path_words(change)
    summary = (
        f"in-place update of {budget.replicas} groups ({words}): max(maxUnavailable, 1) = "
        f"{max(budget.unavailable, 1)} at a time, no pod recreated"
    )
    reasons = in_place_reasons(change)
    notes = (f"in-place path (update-strategy {ext.UPDATE_STRATEGY_IN_PLACE}): {reasons}",)
    return replace(base, change="rollout", summary=summary, notes=notes)


def _in_place_steps(budget: lws_rollout.RolloutBudget) -> list[PlanStep]:
    """Each batch of groups is patched where it runs: down and up in the same step."""
    steps, updated = [], 0
    for batch in planning.batches(budget.replicas, budget.unavailable):
        updated += len(batch)
        groups = tuple(str(o) for o in batch)
        capacity = (("groups", capacity_pct(budget.replicas - len(batch), budget.replicas)),)
        steps.append(PlanStep(groups, groups, capacity, {}, updated=updated, old=budget.replicas - updated))
    return steps
