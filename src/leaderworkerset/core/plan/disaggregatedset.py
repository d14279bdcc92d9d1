"""`lws plan` for a DisaggregatedSet: the roles' steps from the controller's simulation, for one slice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated import rollout as ds_rollout
from leaderworkerset.core.disaggregated import simulation
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.disaggregated.rollout_inputs import scales_during_rollout
from leaderworkerset.core.objects import Obj
from leaderworkerset.core.plan.steps import Plan, PlanStep, capacity_pct, empty_plan, finish_plan
from leaderworkerset.core.rollout import partition as lws_rollout
from leaderworkerset.core.scheduling.accelerators import Accelerators, _add, group_accelerators
from leaderworkerset.core.scheduling.surgefallback import SurgePath, surge_path


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
    base = empty_plan(c.DS_KIND, live, free, time_to_ready)
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
    advance = scales_during_rollout(new)
    for decision in simulation.simulate_ds_rollout(target, role_targets, children, advance=advance):
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
            (role.name, capacity_pct(sum(n for (_, r), n in ready.items() if r == role.name), role.desired))
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
    return finish_plan(
        replace(base, change="rollout", summary=summary, warnings=warnings, notes=notes), steps
    )


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
