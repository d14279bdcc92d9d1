"""`lws plan`: the steps a spec change takes, built from the controllers' own pure functions.

Nothing here re-derives a rollout. Whether a change rolls out is decided by the revision
functions the controllers run (`core.rollout.revision.plan_revision` for an LWS,
`disaggregated_revision` for a DisaggregatedSet); the steps are the controllers' simulations
(`core.rollout.partition.simulate_rollout`, `core.disaggregated.simulation.simulate_ds_rollout`). This
module only annotates those steps with what an operator asks before applying: which groups go down
and come up, how much ready capacity is left, how many extra accelerators the surge needs and
whether the nodes have them, and how long it may take given how long groups took to get ready so
far.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disaggregated import rollout as ds_rollout
from leaderworkerset.core.disaggregated import simulation
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.groups.state import MISSING_GROUP, GroupState, group_states
from leaderworkerset.core.objects import (
    Obj,
    is_hash,
    lws_replicas,
    lws_size,
    metadata,
    statefulset_replicas,
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

ChangeKind = Literal["rollout", "scale only", "no rollout", "no change"]


# --- accelerators ----------------------------------------------------------------------------------


# --- observed time to ready ------------------------------------------------------------------------


# --- the plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanStep:
    """One step: what goes down and comes up, the capacity left right after, and the surge.

    `down`/`up` name groups (LWS: ordinals) or `role +-count` (DS). `capacity` is the
    ready replicas per role as a percent of the target while this step's new groups are not
    ready yet; `updated`/`old` count groups on the new and old revision (LWS: the leader pods).
    """

    down: tuple[str, ...]
    up: tuple[str, ...]
    capacity: tuple[tuple[str, int], ...]
    extra_accelerators: Mapping[str, int]
    updated: int = 0
    old: int = 0
    waits_for_ready: bool = True
    eta_seconds: float | None = None


@dataclass(frozen=True)
class Plan:
    kind: str
    namespace: str
    name: str
    change: ChangeKind
    summary: str
    steps: tuple[PlanStep, ...] = ()
    peak_extra_accelerators: Mapping[str, int] = field(default_factory=dict)
    free_accelerators: Mapping[str, int] | None = None
    time_to_ready_seconds: float | None = None
    warnings: tuple[str, ...] = ()
    # Facts of the cluster that shape the rollout, printed as they are (not warnings).
    notes: tuple[str, ...] = ()

    @property
    def eta_seconds(self) -> float | None:
        return self.steps[-1].eta_seconds if self.steps else 0.0


def _empty_plan(kind: str, live: Obj, free: Mapping[str, int] | None, time_to_ready: float | None) -> Plan:
    """The plan of an object before any step is known: "no change"."""
    meta = metadata(live)
    return Plan(
        kind=kind,
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        change="no change",
        summary="",
        free_accelerators=free,
        time_to_ready_seconds=time_to_ready,
    )


def _pct(ready: int, target: int) -> int:
    return 100 if target <= 0 else (100 * ready) // target


def _etas(waits: Sequence[bool], time_to_ready: float | None) -> list[float | None]:
    if time_to_ready is None:
        return [None] * len(waits)
    total, result = 0.0, list[float | None]()
    for wait in waits:
        total += time_to_ready if wait else 0.0
        result.append(total)
    return result


def surge_warnings(peak: Mapping[str, int], free: Mapping[str, int] | None) -> list[str]:
    """A warning per accelerator the plan's peak (surge or growth) needs beyond the nodes' free
    allocatable."""
    if free is None:
        return []
    return [
        f"needs {count} more {name} than the groups hold now, the eligible nodes have "
        f"{max(0, free.get(name, 0))} free"
        for name, count in sorted(peak.items())
        if count > 0 and count > free.get(name, 0)
    ]


def with_spec(live: Obj, new: Obj) -> dict[str, Any]:
    """The live object carrying the new spec and the new file's annotations (our opt-in features
    are annotations, e.g. surge-fallback-seconds): what the controller reads after the apply."""
    result = {**copy.deepcopy(dict(live)), "spec": copy.deepcopy(new.get("spec") or {})}
    added = metadata(new).get("annotations") or {}
    if added:
        meta = result["metadata"] = dict(result.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **copy.deepcopy(added)}
    return result


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
        capacity=(("groups", _pct(ready, replicas)),),
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


def _finish(plan: Plan, steps: list[PlanStep]) -> Plan:
    etas = _etas([step.waits_for_ready for step in steps], plan.time_to_ready_seconds)
    timed = tuple(replace(step, eta_seconds=eta) for step, eta in zip(steps, etas, strict=True))
    peak: Accelerators = {}
    for step in timed:
        for name, count in step.extra_accelerators.items():
            if count > 0:  # a step that frees accelerators needs none
                peak[name] = max(peak.get(name, 0), count)
    warnings = (*plan.warnings, *surge_warnings(peak, plan.free_accelerators))
    return replace(plan, steps=timed, peak_extra_accelerators=peak, warnings=warnings)


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
    base = _empty_plan(c.LWS_KIND, live, free, time_to_ready)
    if is_hash(proposed):
        return replace(
            base,
            change="no rollout",
            summary="Hash group identity: the leader Deployment's rolling update orders the groups "
            "(kube-controller-manager), so no step plan is computed",
            warnings=("no step plan for groupIdentity Hash",),
        )
    current_groups = (
        statefulset_replicas(leader_statefulset) if leader_statefulset is not None else lws_replicas(live)
    )
    revision = plan_revision(proposed, leader_statefulset, revisions, RevisionMatchCache())
    budget = lws_rollout.rollout_budget(proposed)
    old_group, new_group = group_accelerators(live), group_accelerators(proposed)
    baseline: Accelerators = {}
    _add(baseline, old_group, current_groups)
    observed, sts_view = None, None
    if leader_pods is not None and leader_statefulset is not None:
        sts_view = lws_rollout.LeaderStatefulSetView.of(leader_statefulset)
        observed = group_states(
            lws_name=base.name,
            sts_replicas=sts_view.replicas,
            size=lws_size(live),
            revision_key=revision.key,
            leader_pods=leader_pods,
            statefulsets=statefulsets,
        )
    # A rollout already under way: surge still up, or groups left on an older revision.
    under_way = sts_view is not None and (
        sts_view.replicas > budget.replicas
        or any(state != MISSING_GROUP and not state.updated for state in observed or ())
    )
    if not revision.updated and not under_way:
        if budget.replicas == current_groups:
            same = (live.get("spec") or {}) == (proposed.get("spec") or {})
            change: ChangeKind = "no change" if same else "no rollout"
            summary = "nothing changes" if same else "the change does not alter the group template"
            return _finish(replace(base, change=change, summary=summary), [])
        grow = budget.replicas > current_groups
        extra: Accelerators = {}
        _add(extra, old_group, budget.replicas - current_groups)
        scaled = PlanStep(
            down=() if grow else tuple(str(o) for o in range(budget.replicas, current_groups)),
            up=tuple(str(o) for o in range(current_groups, budget.replicas)),
            capacity=(("groups", _pct(min(current_groups, budget.replicas), budget.replicas)),),
            extra_accelerators={name: count for name, count in extra.items() if count},
            updated=0,
            old=budget.replicas,
            waits_for_ready=grow,
        )
        summary = f"{current_groups} → {budget.replicas} groups, no group is recreated"
        return _finish(replace(base, change="scale only", summary=summary), [scaled])
    in_place_note = None
    if revision.updated and planning.wants_in_place_update(proposed):
        kinds = classify_specs(
            live.get("spec") or {}, proposed.get("spec") or {}, resizes_in_place=resizes_in_place
        )
        if kinds.in_place:
            return _finish(_in_place_plan(base, kinds, budget), _in_place_steps(budget))
        reasons = "; ".join(kinds.reasons(UpdatePath.RECREATE))
        in_place_note = f"recreate path (update-strategy {ext.UPDATE_STRATEGY_IN_PLACE}): {reasons}"
    path = surge_path(live, proposed, budget, free_by_node)
    steps_budget = budget
    if path.without_surge:
        # The controller's step without surge: the surge is gone (the simulation starts without it).
        steps_budget = without_surge_budget(budget)
        current_groups = min(current_groups, budget.replicas)
        baseline = {}  # the Pending surge groups hold no accelerators
        _add(baseline, old_group, current_groups)
        if sts_view is not None:
            sts_view = replace(sts_view, replicas=min(sts_view.replicas, budget.replicas))
        observed = None if observed is None else observed[: budget.replicas]
    simulated = lws_rollout.simulate_rollout(
        steps_budget,
        lws_name=base.name,
        current_replicas=current_groups,
        observed=observed,
        statefulset=sts_view,
        revision_created=revision.updated,
    )
    steps, previous = [], _live_row(observed, current_groups, revision.updated)
    for sim in simulated:
        step = _lws_row_step(previous, sim.groups, budget.replicas, old_group, new_group, baseline)
        # Reconciles that only wait for readiness (or freeze the StatefulSet) move no group.
        if step.down or step.up:
            steps.append(step)
        previous = sim.groups
    summary = (
        f"rolling update of {budget.replicas} groups: maxSurge {budget.surge}, maxUnavailable "
        f"{budget.unavailable}, partition {budget.user_partition}"
    )
    if not revision.updated:
        summary = "a rollout is under way, no new template: its remaining steps; " + summary
    # Rollout control (opt-in): the steps are the controller's, but it does not take them now.
    warnings: tuple[str, ...] = tuple(rollout_notes(live))
    if rollout_control(proposed).paused and not any(w.startswith("rollout paused") for w in warnings):
        warnings += ("rollout paused: the controller takes none of these steps until `lws rollout resume`",)
    if budget.user_partition:
        summary += f"; groups below {budget.user_partition} stay on the old revision"
    held = len(simulated[-1].groups) - budget.replicas if simulated else 0
    if held > 0:
        warnings += (
            f"{held} surge group(s) stay up after the last step: the partition keeps old groups, "
            "so the controller never releases the surge",
        )
    # The StatefulSets of this cluster ignore maxUnavailable: the controller replaces the groups.
    note = emulation_note(proposed, leader_statefulset)
    notes = tuple(n for n in (in_place_note, path.note, note) if n is not None)
    warnings += () if path.warning is None else (path.warning,)
    return _finish(replace(base, change="rollout", summary=summary, warnings=warnings, notes=notes), steps)


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
        capacity = (("groups", _pct(budget.replicas - len(batch), budget.replicas)),)
        steps.append(PlanStep(groups, groups, capacity, {}, updated=updated, old=budget.replicas - updated))
    return steps


# --- DisaggregatedSet ------------------------------------------------------------------------------


def _role_specs(ds: Obj) -> dict[str, Obj]:
    return {str(role.get("name")): role for role in (ds.get("spec") or {}).get("roles") or []}


def _role_group_accelerators(role: Obj) -> Accelerators:
    return group_accelerators({"spec": role.get("spec") or {}})


def plan_disaggregatedset(
    live: Obj,
    new: Obj,
    *,
    children: Sequence[ds_rollout.ChildView],
    targets: Mapping[str, int],
    role_targets: Sequence[ds_rollout.RoleTarget],
    slices: int = 1,
    time_to_ready: float | None = None,
    free: Mapping[str, int] | None = None,
    free_by_node: Mapping[str, Accelerators] | None = None,
) -> Plan:
    """The plan for `new` over `live`, for one slice (`children`: that slice's child LWS views;
    every slice rolls the same way at once, so accelerators are multiplied by `slices`)."""
    base = _empty_plan(c.DS_KIND, live, free, time_to_ready)
    live_roles, new_roles = _role_specs(live), _role_specs(new)
    current = disaggregated_revision(list(live_roles.values()))
    target = disaggregated_revision(list(new_roles.values()))
    if current == target:
        live_counts = {child.role: child.spec_replicas for child in children if child.revision == current}
        if dict(targets) != live_counts:
            changes = ", ".join(
                f"{role} {live_counts.get(role, 0)} → {count}" for role, count in sorted(targets.items())
            )
            summary = f"revision {current} stays ({changes})"
            return replace(base, change="scale only", summary=summary)
        same = (live.get("spec") or {}) == (new.get("spec") or {})
        summary = (
            "nothing changes"
            if same
            else f"revision {current} stays (only role names and templates roll a DS)"
        )
        return replace(base, change="no change" if same else "no rollout", summary=summary)

    per_group = {
        (revision, name): _role_group_accelerators(role)
        for revision, roles in ((current, live_roles), (target, new_roles))
        for name, role in roles.items()
    }
    state = {(child.revision, child.role): child.spec_replicas for child in children if not child.terminating}
    ready = dict(state)

    def in_use(counts: Mapping[tuple[str, str], int]) -> Accelerators:
        total: Accelerators = {}
        for key, count in counts.items():
            _add(total, per_group.get(key, {}), count * slices)
        return total

    baseline = in_use(state)
    steps = []
    paths = _ds_surge_paths(live, new, new_roles, role_targets, free_by_node)
    if any(path.without_surge for path in paths):
        role_targets = [ds_rollout.without_surge_role(role) for role in role_targets]
    for decision in simulation.simulate_ds_rollout(target, role_targets, children):
        if decision.kind != "scale":
            continue
        # Down is from the live revision unless an older rollout left others; up is the target.
        down = tuple(
            f"{ch.role} -{ch.from_replicas - ch.replicas}"
            + ("" if ch.revision == current else f" @{ch.revision}")
            for ch in decision.scale_down
        )
        up = tuple(f"{ch.role} +{ch.replicas - ch.from_replicas}" for ch in decision.scale_up)
        for change in decision.scale_down:
            state[(change.revision, change.role)] = ready[(change.revision, change.role)] = change.replicas
        # Capacity is lowest between the writes and readiness: old replicas gone, new not ready.
        capacity = tuple(
            (role.name, _pct(sum(n for (_, r), n in ready.items() if r == role.name), role.desired))
            for role in role_targets
        )
        for change in decision.scale_up:
            state[(change.revision, change.role)] = change.replicas
        used = in_use(state)
        extra = {name: used.get(name, 0) - baseline.get(name, 0) for name in sorted({*used, *baseline})}
        for change in decision.scale_up:
            ready[(change.revision, change.role)] = change.replicas
        steps.append(
            PlanStep(
                down=down,
                up=up,
                capacity=capacity,
                extra_accelerators={name: count for name, count in extra.items() if count},
                updated=sum(n for (rev, _), n in state.items() if rev == target),
                old=sum(n for (rev, _), n in state.items() if rev != target),
                waits_for_ready=bool(decision.scale_up),
            )
        )
    unresolved = sorted(new_roles.keys() - targets.keys())
    warnings = tuple(
        f"role {role}: External scaling without a role scaler, not planned" for role in unresolved
    )
    warnings += tuple(path.warning for path in paths if path.warning)
    notes = tuple(path.note for path in paths if path.note)
    summary = f"rolling update from revision {current} to {target}, {slices} slice(s) in parallel"
    return _finish(replace(base, change="rollout", summary=summary, warnings=warnings, notes=notes), steps)


def _ds_surge_paths(
    live: Obj,
    new: Obj,
    roles: Mapping[str, Obj],
    targets: Sequence[ds_rollout.RoleTarget],
    free_by_node: Mapping[str, Accelerators] | None,
) -> list[SurgePath]:
    """Each role's surge path (capacity-aware surge: without surge for all roles as soon as one is)."""
    paths = []
    for target in targets:
        budget = ds_rollout.role_budget(target)
        as_lws = lws_rollout.RolloutBudget(target.desired, budget.max_surge, budget.max_unavailable, 0)
        role = {"spec": (roles.get(target.name) or {}).get("spec") or {}}
        paths.append(surge_path(live, new, as_lws, free_by_node, group=role, role=target.name))
    return paths
