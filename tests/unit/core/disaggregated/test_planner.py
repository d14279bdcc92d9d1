"""The fractional rollout planner: upstream v1.0's planner cases first, re-expressed
as table rows (the upstream test name is in each id), then our own rows."""

from __future__ import annotations

import itertools
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


# --------------------------------------------------------------------------------------------------
# invariants of whole simulations (upstream TestNRolePlannerInvariants / assertPlannerRolloutInvariants)
# --------------------------------------------------------------------------------------------------


def within_window(counts: list[int], progress: list[int]) -> bool:
    sized = [(done, count) for done, count in zip(progress, counts, strict=True) if count > 0]
    if not sized:
        return True
    fractions = [done / count for done, count in sized]
    return max(fractions) - min(fractions) <= 1 / min(count for _, count in sized) + 1e-9


def assert_rollout_invariants(initial: list[int], target: list[int], config: list[Budget]) -> None:
    steps = p.compute_all_steps(initial, target, config)
    assert list(steps[0].past) == initial
    assert list(steps[0].new) == [0] * len(initial)
    assert list(steps[-1].past) == [0] * len(initial), steps[-1]
    assert list(steps[-1].new) == target, steps[-1]
    for index, step in enumerate(steps):
        for role, (old, new) in enumerate(zip(step.past, step.new, strict=True)):
            assert 0 <= old <= initial[role]
            assert 0 <= new <= target[role]
            ceiling = max(initial[role], target[role]) + config[role].max_surge
            floor = max(0, min(initial[role], target[role]) - config[role].max_unavailable)
            assert floor <= old + new <= ceiling, (index, role, step)
            if index:
                assert old <= steps[index - 1].past[role]  # the old side never grows back
                assert new >= steps[index - 1].new[role]  # the new side never shrinks
        if index:
            assert step != steps[index - 1], f"step {index} makes no progress"
        drained = [count - min(old, count) for old, count in zip(step.past, initial, strict=True)]
        assert within_window(initial, drained), (index, "old", step)
        assert within_window(target, list(step.new)), (index, "new", step)


INVARIANT_CASES = [
    pytest.param(
        [6, 3, 2],
        [6, 3, 2],
        [1, 1, 1],
        [0, 0, 0],
        id="upstream TestNRolePlannerInvariants/three roles symmetric",
    ),
    pytest.param(
        [3, 8, 2],
        [7, 3, 5],
        [2, 1, 1],
        [0, 1, 1],
        id="upstream TestNRolePlannerInvariants/three roles mixed scaling and budgets",
    ),
    pytest.param(
        [4, 4, 0],
        [4, 4, 4],
        [1, 1, 1],
        [0, 0, 0],
        id="upstream TestNRolePlannerInvariants/add a third role",
    ),
    pytest.param(
        [4, 4, 4, 4],
        [4, 4, 4, 0],
        [1] * 4,
        [0] * 4,
        id="upstream TestNRolePlannerInvariants/remove a fourth role",
    ),
    pytest.param(
        [4, 4, 0, 3],
        [4, 4, 3, 0],
        [1] * 4,
        [0] * 4,
        id="upstream TestNRolePlannerInvariants/replace one of four roles",
    ),
    pytest.param(
        [1, 2, 10, 50, 100],
        [1, 2, 10, 50, 100],
        [1] * 5,
        [0] * 5,
        id="upstream TestNRolePlannerInvariants/five roles with extreme imbalance",
    ),
    pytest.param(
        [1, 2, 3, 4, 5],
        [5, 6, 7, 8, 9],
        [1, 2, 1, 2, 1],
        [0] * 5,
        id="upstream TestNRolePlannerInvariants/five roles scale up",
    ),
    pytest.param(
        [9, 8, 7, 6, 5],
        [5, 4, 3, 2, 1],
        [1] * 5,
        [1, 2, 1, 2, 1],
        id="upstream TestNRolePlannerInvariants/five roles scale down",
    ),
    pytest.param([10, 10, 10], [10, 10, 10], [1] * 3, [0] * 3, id="three roles of ten with defaults"),
    pytest.param([0, 0], [3, 5], [1, 1], [0, 0], id="scale up from nothing"),
]


@pytest.mark.parametrize(
    ("initial", "target", "surge", "unavailable"),
    INVARIANT_CASES,
)
def test_planner_invariants(
    initial: list[int], target: list[int], surge: list[int], unavailable: list[int]
) -> None:
    assert_rollout_invariants(initial, target, budgets(surge, unavailable))


def test_upstream_planner_progress_imbalanced_zero_surge_does_not_wedge() -> None:
    """upstream TestPlannerProgress/imbalanced zero surge does not wedge."""
    for initial in ([1, 4], [1, 5]):
        assert completes(p.compute_all_steps(initial, initial, budgets([0, 0], [1, 1])), initial), initial


def test_upstream_planner_progress_larger_budgets_reduce_steps() -> None:
    """upstream TestPlannerProgress/larger budgets reduce steps."""
    initial = [20, 4]
    small = p.compute_all_steps(initial, initial, budgets([1, 1], [0, 0]))
    large = p.compute_all_steps(initial, initial, budgets([3, 3], [2, 2]))
    assert completes(small, initial)
    assert completes(large, initial)
    assert len(large) < len(small)


def test_upstream_planner_progress_old_and_new_use_independent_fractions() -> None:
    """upstream TestPlannerProgress/old and new use independent fractions."""
    initial, target = [4, 4], [12, 3]
    assert (p.step_count(initial), p.step_count(target)) == (4, 12)
    assert completes(p.compute_all_steps(initial, target, budgets([2, 2], [2, 2])), target)


def test_upstream_replica_fraction_coordination_bounds_skew() -> None:
    """upstream TestReplicaFractionCoordination/largest replica fraction bounds skew."""
    steps = p.compute_all_steps([8, 3], [8, 3], budgets([1, 1], [0, 0]))
    assert completes(steps, [8, 3])
    for step in steps:
        assert abs(step.new[0] / 8 - step.new[1] / 3) <= 1 / 3 + 1e-9, step


def test_upstream_replica_fraction_coordination_largest_role_one_at_a_time() -> None:
    """upstream TestReplicaFractionCoordination/largest role advances one pod at a time."""
    steps = p.compute_all_steps([2, 10], [2, 10], budgets([1, 1], [0, 0]))
    assert all(later.new[1] - earlier.new[1] <= 1 for earlier, later in itertools.pairwise(steps))


def _grant_readiness(state: list[RoleSnapshot]) -> bool:
    """One more new replica becomes Ready (the first role that has one pending)."""
    for i, role in enumerate(state):
        if role.new_ready < role.new_spec:
            state[i] = replace(role, new_ready=role.new_ready + 1)
            return True
    return False


EXHAUSTIVE_CONFIGS = [
    budgets([1, 1], [0, 0]),
    budgets([0, 0], [1, 1]),
    budgets([1, 1], [1, 1]),
    budgets([2, 2], [1, 1]),
    budgets([2, 1], [1, 2]),
]


@pytest.mark.parametrize(
    "config", [pytest.param(c, id=f"config {i}") for i, c in enumerate(EXHAUSTIVE_CONFIGS)]
)
def test_upstream_executor_state_transitions_exhaustive(config: list[Budget]) -> None:
    """upstream TestExecutorStateTransitionsExhaustive: every 2-role rollout with initial and target
    0..5, readiness arriving one replica at a time, applying only safe drains: the surge ceiling,
    the availability floor and the pending allowance hold at every iteration and it completes."""
    scenarios = 0
    for ip, id_, tp, td in itertools.product(range(6), repeat=4):
        initial, target = [ip, id_], [tp, td]
        state = [
            RoleSnapshot(
                initial_old=i, old_spec=i, old_ready=i, new_spec=0, new_ready=0, new_target=t, budget=b
            )
            for i, t, b in zip(initial, target, config, strict=True)
        ]
        scenarios += 1
        for _ in range(100):
            _assert_snapshot_invariants(state, (initial, target))
            if p.is_spec_complete(state):
                if p.is_ready_complete(state):
                    break
                assert _grant_readiness(state), (initial, target, state)
                continue
            step = p.next_step(state)
            if step is None:
                assert _grant_readiness(state), ("blocked without pending work", initial, target, state)
                continue
            changed = False
            for i, role in enumerate(state):
                drain = min(max(0, role.old_spec - step.past[i]), p.max_safe_drain(role))
                if drain > 0:
                    role = replace(
                        role,
                        old_spec=role.old_spec - drain,
                        old_ready=min(role.old_ready, role.old_spec - drain),
                    )
                    changed = True
                if step.new[i] > role.new_spec:
                    role = replace(role, new_spec=step.new[i])
                    changed = True
                state[i] = role
            assert changed or _grant_readiness(state), (
                "no mutation and no pending work",
                initial,
                target,
                state,
            )
        else:
            raise AssertionError(f"rollout did not complete: {initial} -> {target}: {state}")
    assert scenarios == 6**4


def _assert_snapshot_invariants(state: list[RoleSnapshot], scenario: object) -> None:
    budget_steps = max(max(role.initial_old, role.new_target) for role in state)
    for role in state:
        count = max(role.initial_old, role.new_target)
        assert role.old_spec + role.new_spec <= count + role.budget.max_surge, (scenario, role)
        floor = max(0, min(role.initial_old, role.new_target) - role.budget.max_unavailable)
        assert role.old_ready + role.new_ready >= floor, (scenario, role)
        pending = p._projected_budget(
            count, role.budget.max_surge + role.budget.max_unavailable, budget_steps
        )
        assert role.new_spec - role.new_ready <= pending, (scenario, role)
    assert within_window([role.new_target for role in state], [role.new_spec for role in state]), scenario


# --------------------------------------------------------------------------------------------------
# the pieces
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "want"),
    [
        pytest.param([8, 8], 8, id="upstream TestFractionalStepCount/symmetric"),
        pytest.param([8, 10], 10, id="upstream TestFractionalStepCount/asymmetric"),
        pytest.param([0, 4], 4, id="upstream TestFractionalStepCount/zero role"),
        pytest.param([0, 0], 0, id="upstream TestFractionalStepCount/empty"),
    ],
)
def test_step_count(replicas: list[int], want: int) -> None:
    assert p.step_count(replicas) == want


@pytest.mark.parametrize(
    ("current", "draining", "want"),
    [
        pytest.param([0, 0], False, 0, id="upstream TestLeastAdvancedStep/new at zero"),
        pytest.param([2, 1], False, 1, id="upstream TestLeastAdvancedStep/new at 25%"),
        pytest.param([6, 1], False, 1, id="upstream TestLeastAdvancedStep/new limited by slow role"),
        pytest.param([8, 4], True, 0, id="upstream TestLeastAdvancedStep/old at zero"),
        pytest.param([6, 3], True, 1, id="upstream TestLeastAdvancedStep/old at 25%"),
        pytest.param([4, 3], True, 1, id="upstream TestLeastAdvancedStep/old limited by slow role"),
        pytest.param([0, 0], True, 4, id="upstream TestLeastAdvancedStep/old fully drained"),
    ],
)
def test_least_advanced_step(current: list[int], draining: bool, want: int) -> None:
    assert p._least_advanced_step(current, [8, 4], 4, draining=draining) == want


@pytest.mark.parametrize(
    ("count", "step", "steps", "draining", "want"),
    [
        pytest.param(*row, id=f"upstream TestWantReplicas/{row}")
        for row in [
            (8, 0, 4, False, 0),
            (8, 1, 4, False, 2),
            (8, 4, 4, False, 8),
            (8, 0, 4, True, 8),
            (8, 1, 4, True, 6),
            (8, 4, 4, True, 0),
            (11, 1, 3, False, 4),
            (11, 2, 3, False, 8),
            (8, 1, 6, False, 2),
            (8, 2, 6, False, 3),
            (8, 0, 0, False, 0),
            (8, 0, 0, True, 8),
        ]
    ],
)
def test_wanted(count: int, step: int, steps: int, draining: bool, want: int) -> None:
    assert p._wanted(count, step, steps, draining=draining) == want


def test_upstream_growing_role_targets_use_kep_window() -> None:
    """upstream TestGrowingRoleTargetsUseKEPWindow: decode at 1/4, window 1/4 -> prefill <= 4/8."""
    assert p._bound_growth_to_window([0, 1], [8, 4], [8, 1]) == [4, 1]


def test_upstream_draining_role_targets_use_kep_window() -> None:
    """upstream TestDrainingRoleTargetsUseKEPWindow: decode may drain one (1/4), not two."""
    assert p._bound_drain_to_window([8, 4], [8, 4], [8, 2]) == [8, 3]


def test_upstream_window_bounds_do_not_reverse_observed_progress() -> None:
    """upstream TestWindowBoundsDoNotReverseObservedProgress."""
    assert p._bound_growth_to_window([6, 1], [8, 4], [8, 1]) == [6, 1]
    assert p._bound_drain_to_window([2, 3], [8, 4], [0, 3]) == [2, 3]


def test_upstream_hard_new_replica_limits() -> None:
    """upstream TestHardNewReplicaLimits."""
    snapshot = [
        RoleSnapshot(8, 6, 0, 3, 0, 8, Budget(2, 2)),
        RoleSnapshot(4, 3, 0, 2, 0, 4, Budget(2, 2)),
    ]
    # prefill capped by pending allowance and remaining surge; decode's allowance is used up
    assert p.hard_new_limits(snapshot)[:2] == [4, 2]
    snapshot = [replace(snapshot[0], old_spec=5, new_ready=1), replace(snapshot[1], old_spec=2, new_ready=1)]
    # readiness plus released surge headroom opens the next shared fraction
    assert p.hard_new_limits(snapshot) == [5, 3]


def test_upstream_fractional_coordination_window_preserves_largest_replica_fraction() -> None:
    """upstream TestFractionalCoordinationWindowPreservesLargestReplicaFraction."""
    snapshot = [RoleSnapshot(0, 0, 0, 1, 1, 2, Budget(1, 0)), RoleSnapshot(0, 0, 0, 1, 0, 3, Budget(1, 0))]
    limited = [min(want, limit) for want, limit in zip([2, 2], p.hard_new_limits(snapshot), strict=True)]
    limited = [max(role.new_spec, want) for role, want in zip(snapshot, limited, strict=True)]
    # 100% versus 33% would exceed largestReplicaFraction = 1/2
    assert p._bound_growth_to_window([1, 1], [2, 3], limited) == [1, 1]
    snapshot[1] = replace(snapshot[1], new_ready=1)
    limited = [
        max(role.new_spec, min(want, limit))
        for role, want, limit in zip(snapshot, [2, 2], p.hard_new_limits(snapshot), strict=True)
    ]
    assert p._bound_growth_to_window([1, 1], [2, 3], limited) == [2, 2]


def test_upstream_old_targets_apply_availability_before_window() -> None:
    """upstream TestOldTargetsApplyAvailabilityBeforeWindow."""
    snapshot = [RoleSnapshot(8, 8, 8, 0, 0, 8, Budget(0, 0)), RoleSnapshot(4, 4, 4, 0, 0, 4, Budget(0, 2))]
    bounded = [
        role.old_spec - min(max(0, role.old_spec - want), p.max_safe_drain(role))
        for role, want in zip(snapshot, [6, 2], strict=True)
    ]
    assert bounded == [8, 2]
    # decode may drain to the edge of the 1/4 window, but no farther
    assert p._bound_drain_to_window([8, 4], [8, 4], bounded) == [8, 3]


def test_upstream_planner_availability_bounds() -> None:
    """upstream TestPlannerAvailabilityBounds (the snapshot half; committed Ready is in test_rollout)."""
    assert p.max_safe_drain(RoleSnapshot(3, 3, 3, 0, 1, 4)) == 1
    # unavailable old replicas can drain once the new revision satisfies the floor
    assert p.max_safe_drain(RoleSnapshot(4, 4, 0, 0, 4, 4)) == 4
    assert not p.is_ready_complete([RoleSnapshot(0, 0, 0, 4, 2, 4)])
    assert p.is_ready_complete([RoleSnapshot(0, 0, 0, 4, 4, 4)])


def test_planner_invariants_case_count() -> None:
    assert len(INVARIANT_CASES) == 10
