"""What a DisaggregatedSet rollout will do, step by step, without a cluster: the planner run against
its own predictions (for `lws plan` and the planner's tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from leaderworkerset.core.disaggregated.planner import (
    step_count,
)
from leaderworkerset.core.disaggregated.rollout import (
    GO_ZERO_TIME,
    ChildView,
    DsRolloutDecision,
    RoleTarget,
    baseline,
    created_at,
    decide_rollout,
)


def _simulation_bound(roles: Sequence[RoleTarget], children: Sequence[ChildView]) -> int:
    initial = [baseline(child) for child in children]
    return max(step_count(initial), step_count([role.desired for role in roles])) * 4 + 10


def _later_than(children: Sequence[ChildView]) -> str:
    latest = max((created_at(child) for child in children), default=GO_ZERO_TIME)
    return (latest.replace(microsecond=0) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def simulate_ds_rollout(
    target_revision: str,
    roles: Sequence[RoleTarget],
    children: Sequence[ChildView],
    max_steps: int | None = None,
    *,
    advance: bool = False,
) -> list[DsRolloutDecision]:
    """Run a rollout to its end with every write observed at once and every replica Ready at once
    (upstream's ``ComputeAllSteps`` harness, lifted to objects). Stops at ``complete``, at a
    decision that cannot progress in this model (``wait``/``blocked``), or after ``max_steps``
    decisions (default: upstream's bound ``4·max(step counts)+10`` plus the create step).
    ``advance``: the set scales during its rollout (``decide_rollout``)."""
    limit = max_steps if max_steps is not None else _simulation_bound(roles, children) + 1
    state = {child.name: child for child in children}
    decisions: list[DsRolloutDecision] = []
    while len(decisions) < limit:
        decision = decide_rollout(target_revision, roles, list(state.values()), advance=advance)
        decisions.append(decision)
        if decision.kind in ("complete", "wait", "blocked"):
            break
        _observe(state, target_revision, decision)
    return decisions


def _observe(state: dict[str, ChildView], target_revision: str, decision: DsRolloutDecision) -> None:
    for name, value in decision.backfill + decision.sync_initial:
        state[name] = replace(state[name], initial_replicas=value)
    created = _later_than(list(state.values()))
    for role, initial in decision.create:
        name = f"{target_revision}-{role}"
        state[name] = ChildView(
            name=name,
            role=role,
            revision=target_revision,
            spec_replicas=0,
            status_replicas=0,
            ready_replicas=0,
            initial_replicas=initial,
            created=created,
        )
    for change in decision.scale_down + decision.scale_up:
        state[change.lws] = replace(
            state[change.lws],
            spec_replicas=change.replicas,
            status_replicas=change.replicas,
            ready_replicas=change.replicas,
        )
