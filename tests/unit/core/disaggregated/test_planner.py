"""The fractional rollout planner (spec §3.J J4-J9b): upstream v1.0's planner cases first, re-expressed
as table rows (the upstream test name is in each id), then our own rows."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from leaderworkerset.core.disaggregated import planner as p
from leaderworkerset.core.disaggregated.planner import Budget, RoleSnapshot, Step


def budgets(surge: list[int], unavailable: list[int]) -> list[Budget]:
    return [Budget(s, u) for s, u in zip(surge, unavailable, strict=True)]


def ready(
    initial: list[int], old: list[int], new: list[int], target: list[int], config: list[Budget]
) -> list[RoleSnapshot]:
    """Every requested replica is Ready (upstream's readySnapshot)."""
    return [
        RoleSnapshot(initial_old=i, old_spec=o, old_ready=o, new_spec=n, new_ready=n, new_target=t, budget=b)
        for i, o, n, t, b in zip(initial, old, new, target, config, strict=True)
    ]


def states(steps: list[Step]) -> list[tuple[list[int], list[int]]]:
    return [(list(step.past), list(step.new)) for step in steps]


def completes(steps: list[Step], target: list[int]) -> bool:
    last = steps[-1]
    return all(old == 0 and new >= want for old, new, want in zip(last.past, last.new, target, strict=True))


# --------------------------------------------------------------------------------------------------
# full simulations with pinned sequences
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllStepsCase:
    initial: list[int]
    target: list[int]
    surge: list[int]
    unavailable: list[int]
    want_states: list[tuple[list[int], list[int]]]


ALL_STEPS_CASES = [
    pytest.param(
        AllStepsCase(
            [8, 4],
            [8, 4],
            [2, 2],
            [2, 2],
            [([8, 4], [0, 0]), ([6, 3], [2, 1]), ([4, 2], [4, 2]), ([2, 1], [6, 3]), ([0, 0], [8, 4])],
        ),
        id="upstream TestComputeAllSteps/symmetric 8P 4D",
    ),
    pytest.param(
        AllStepsCase(
            [10, 2],
            [6, 8],
            [2, 2],
            [0, 0],
            [
                ([10, 2], [0, 0]),
                ([9, 2], [2, 2]),
                ([8, 2], [3, 4]),
                ([7, 2], [4, 6]),
                ([6, 2], [5, 8]),
                ([5, 1], [6, 8]),
                ([4, 1], [6, 8]),
                ([3, 1], [6, 8]),
                ([2, 1], [6, 8]),
                ([1, 1], [6, 8]),
                ([0, 0], [6, 8]),
            ],
        ),
        id="upstream TestComputeAllSteps/asymmetric scale",
    ),
    pytest.param(
        AllStepsCase(
            [4, 4],
            [4, 4],
            [0, 0],
            [2, 2],
            [([4, 4], [0, 0]), ([2, 2], [0, 0]), ([2, 2], [2, 2]), ([0, 0], [2, 2]), ([0, 0], [4, 4])],
        ),
        id="upstream TestComputeAllSteps/zero surge",
    ),
    # ours (derived by hand): one role with surge 1 and no unavailability alternates like a
    # Deployment: a new replica first, then an old one may go once the new one is Ready.
    pytest.param(
        AllStepsCase(
            [3],
            [3],
            [1],
            [0],
            [([3], [0]), ([3], [1]), ([2], [1]), ([2], [2]), ([1], [2]), ([1], [3]), ([0], [3])],
        ),
        id="single role surge 1 replaces one at a time",
    ),
    # ours (derived by hand): a role scaled to zero in the new revision has no availability
    # floor, so its old side drains on the old fraction scale while the other role is replaced.
    # The planner alone lets it reach 0 old before the other role; the executor's drain
    # coordinator is what keeps one replica there (see test_rollout.py).
    pytest.param(
        AllStepsCase(
            [2, 2],
            [2, 0],
            [1, 1],
            [0, 0],
            [([2, 2], [0, 0]), ([2, 1], [1, 0]), ([1, 1], [1, 0]), ([1, 0], [2, 0]), ([0, 0], [2, 0])],
        ),
        id="role scaled to zero drains with the other",
    ),
]


@pytest.mark.parametrize("case", ALL_STEPS_CASES)
def test_compute_all_steps(case: AllStepsCase) -> None:
    steps = p.compute_all_steps(case.initial, case.target, budgets(case.surge, case.unavailable))
    assert states(steps) == case.want_states


def test_compute_all_steps_case_count() -> None:
    assert len(ALL_STEPS_CASES) == 5


# --------------------------------------------------------------------------------------------------
# one step
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NextStepCase:
    snapshot: list[RoleSnapshot]
    parked: list[int] | None
    want_past: list[int] | None  # None: no step at all
    want_new: list[int] | None = None


def _unready_new(snapshot: list[RoleSnapshot]) -> list[RoleSnapshot]:
    return [replace(role, new_ready=0) for role in snapshot]


NEXT_STEP_CASES = [
    pytest.param(
        NextStepCase(ready([3, 6], [0, 0], [4, 7], [3, 6], budgets([1, 1], [0, 0])), None, None),
        id="upstream TestComputeNextStep/complete",
    ),
    pytest.param(
        NextStepCase(ready([4, 4], [4, 4], [0, 0], [4, 4], budgets([1, 1], [0, 0])), None, [4, 4], [1, 1]),
        id="upstream TestComputeNextStep/fresh rollout",
    ),
    pytest.param(
        NextStepCase(ready([5, 5], [3, 3], [0, 0], [5, 5], budgets([0, 0], [2, 2])), None, [3, 3], [2, 2]),
        id="upstream TestComputeNextStep/new side catches up to released capacity",
    ),
    pytest.param(
        NextStepCase(ready([2, 2], [2, 2], [0, 1], [2, 2], budgets([1, 1], [0, 0])), None, [2, 1], [1, 1]),
        id="upstream TestComputeNextStep/allows progress up to the fractional window",
    ),
    pytest.param(
        NextStepCase([RoleSnapshot(6, 3, 2, 4, 4, 6, Budget(1, 0))], [1], None),
        id="upstream TestComputeNextStep/phase target does not lower the global availability floor",
    ),
    pytest.param(
        NextStepCase(
            [RoleSnapshot(4, 1, 1, 4, 2, 4, Budget(1, 1)), RoleSnapshot(1, 1, 1, 1, 1, 1, Budget(1, 1))],
            None,
            [1, 0],
            [4, 1],
        ),
        id="upstream TestComputeNextStepUsesReadySafeDrain",
    ),
    pytest.param(
        NextStepCase([RoleSnapshot(4, 4, 4, 0, 0, 4, Budget(0, 1))], None, [3], [0]),
        id="upstream TestComputeNextStepZeroSurgeUsesAvailableSlot/slot used for a replacement",
    ),
    pytest.param(
        NextStepCase([RoleSnapshot(4, 4, 3, 0, 0, 4, Budget(0, 1))], None, None),
        id="upstream TestComputeNextStepZeroSurgeUsesAvailableSlot/unready old replica closes the slot",
    ),
    pytest.param(
        NextStepCase(
            [RoleSnapshot(4, 3, 3, 0, 0, 4, Budget(0, 2)), RoleSnapshot(8, 8, 8, 0, 0, 8, Budget(0, 1))],
            None,
            [3, 7],
        ),
        id="upstream TestComputeNextStepKeepsDrainInsideWindow",
    ),
    # ours: with nothing Ready on the new side the pending allowance stops further growth.
    pytest.param(
        NextStepCase(
            _unready_new(ready([4, 4], [4, 4], [1, 1], [4, 4], budgets([1, 1], [0, 0]))), None, None
        ),
        id="pending new replicas block the next batch",
    ),
    # ours (derived by hand): one Ready replica parked in an older revision still serves, so the
    # new revision stops one short of its target; without it the last replica is added.
    pytest.param(
        NextStepCase(ready([4], [1], [3], [4], budgets([1], [0])), [1], None),
        id="parked ready replicas reduce the new phase target",
    ),
    pytest.param(
        NextStepCase(ready([4], [1], [3], [4], budgets([1], [0])), None, [1], [4]),
        id="without parked replicas the new revision reaches its target",
    ),
]


@pytest.mark.parametrize("case", NEXT_STEP_CASES)
def test_next_step(case: NextStepCase) -> None:
    step = p.next_step(case.snapshot, case.parked)
    if case.want_past is None:
        assert step is None
        return
    assert step is not None
    assert list(step.past) == case.want_past
    assert case.want_new is None or list(step.new) == case.want_new


def test_next_step_case_count() -> None:
    assert len(NEXT_STEP_CASES) == 12
