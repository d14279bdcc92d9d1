"""How many steps a rollout takes: a 3-role DS with 10 replicas per role rolls out in no more steps
than upstream's planner takes for the same change."""

from __future__ import annotations

import pytest

from leaderworkerset.core.disaggregated.planner import Budget, compute_all_steps
from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget
from leaderworkerset.core.disaggregated.simulation import simulate_ds_rollout

ROLES = ("prefill", "decode", "router")


def executor_steps(replicas: int, surge: int | None) -> int:
    children = [
        ChildView(f"old-{role}", role, "old", replicas, replicas, replicas, replicas, "2026-01-01T00:00:00Z")
        for role in ROLES
    ]
    roles = [
        RoleTarget(role, replicas, surge, 0 if surge is not None else None, surge is not None)
        for role in ROLES
    ]
    decisions = simulate_ds_rollout("new", roles, children)
    assert decisions[0].kind == "create"
    assert decisions[-1].kind == "complete"
    return sum(1 for decision in decisions if decision.kind == "scale")


@pytest.mark.parametrize(
    ("surge", "want"),
    [
        # surge 1, unavailable 0 (the defaults): a new replica of every role, then (once Ready) an
        # old one of every role, alternating: 2 x 10 steps.
        pytest.param(None, 20, id="3 roles x 10, defaults (surge 1, unavailable 0)"),
        # surge 2: the first step adds two new replicas per role; from then on every step drains one
        # old replica per role (maxUnavailable 0 allows one old-side fraction per step) and refills the
        # surge: 1 + 10 steps.
        pytest.param(2, 11, id="3 roles x 10, surge 2"),
    ],
)
def test_three_roles_of_ten(surge: int | None, want: int) -> None:
    steps = executor_steps(10, surge)
    assert steps == want
    # the planner alone, upstream's ComputeAllSteps harness (first element is the start state)
    planner = compute_all_steps([10] * 3, [10] * 3, [Budget(surge or 1, 0)] * 3)
    assert len(planner) - 1 == steps
