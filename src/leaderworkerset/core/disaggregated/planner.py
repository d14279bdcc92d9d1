"""The fractional N-dimensional rollout planner of a DisaggregatedSet.

A rollout replaces the old revision's replicas of every role by new ones while keeping the roles
in proportion: prefill and decode must advance together, or a slice serves with one side starved.
Each side moves on its own *fraction scale*: the new side has ``max(targets)`` steps, the old side
``max(initials)`` steps, and at step ``k`` a role of ``n`` replicas wants ``ceil(n·k/steps)`` new
(or ``ceil(n·(steps-k)/steps)`` old) replicas. The least-advanced role decides the current step, and
a *coordination window* one ``1/smallest-role`` wide stops any role from running ahead.

The schedule is computed on Spec counts (what has already been requested), then made safe on Ready
counts: the new side may not exceed the surge ceiling or run further ahead of readiness than the
projected budgets allow, and the old side may not drain below the per-role availability floor.

Every number here is a plain replica count in a list aligned with one role order; the executor
(``rollout.py``) resolves role names and objects. The arithmetic follows upstream v1.0's planner
step for step, because the step sequence is observable (events, tests, capacity during rollouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Budget",
    "RoleSnapshot",
    "Step",
    "compute_all_steps",
    "hard_new_limits",
    "is_ready_complete",
    "is_spec_complete",
    "max_safe_drain",
    "next_step",
    "step_count",
]

ReplicaCounts = list[int]


@dataclass(frozen=True)
class Budget:
    """A role's resolved rolling-update budget in replicas."""

    max_surge: int = 1
    max_unavailable: int = 0


@dataclass(frozen=True)
class RoleSnapshot:
    """What the planner knows about one role in one reconcile.

    ``initial_old`` is the old side's baseline (the initial-replicas annotation); Spec counts what
    has been requested from the LWS (starting replicas included); Ready counts committed serving
    capacity, which already excludes replicas the LWS is about to remove.
    """

    initial_old: int
    old_spec: int
    old_ready: int
    new_spec: int
    new_ready: int
    new_target: int
    budget: Budget = Budget()


@dataclass(frozen=True)
class Step:
    """Per-role Spec of the old (``past``) and new revision after one step."""

    past: tuple[int, ...]
    new: tuple[int, ...]


# --------------------------------------------------------------------------------------------------
# integer helpers
# --------------------------------------------------------------------------------------------------


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def step_count(replicas: Sequence[int]) -> int:
    """The number of fractional steps of one side: its largest role (0 when every role is empty)."""
    return max(replicas, default=0)


def _projected_budget(role_count: int, budget: int, steps: int) -> int:
    """A per-role budget spread over a common step scale, rounded up."""
    if role_count <= 0 or budget <= 0 or steps <= 0:
        return 0
    return _ceil_div(role_count * budget, steps)


def _least_advanced_step(current: Sequence[int], counts: Sequence[int], steps: int, *, draining: bool) -> int:
    """Progress of the least-advanced non-empty role on a side's scale.

    Both sides want ceiling targets, so the inverse differs: growth is ``floor(cur·steps/n)``, drain
    is the largest k whose ceiling target ``ceil(n·(steps-k)/steps)`` is still >= the current count.
    """
    if steps == 0:
        return 0
    progress = steps
    for have, count in zip(current, counts, strict=True):
        if count == 0:
            continue
        if draining:
            have = min(have, count)
            role_progress = min(max((steps * (count - have + 1) - 1) // count, 0), steps)
        else:
            role_progress = have * steps // count
        progress = min(progress, role_progress)
    return progress


def _wanted(count: int, step: int, steps: int, *, draining: bool) -> int:
    """A role's replicas at fractional ``step`` (J4): ceiling of its share."""
    if steps == 0:
        return count if draining else 0
    if draining:
        step = steps - step
    return _ceil_div(count * step, steps)


def _project_step(step: int, from_steps: int, to_steps: int) -> int:
    """A step of one side expressed on the other side's scale, rounded up and capped."""
    if step <= 0 or from_steps <= 0 or to_steps <= 0:
        return 0
    return min(_ceil_div(step * to_steps, from_steps), to_steps)


# --------------------------------------------------------------------------------------------------
# the coordination window
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """How far a role may progress: lower edge ``lead_replicas/lead_count`` (the least-advanced
    role) plus one ``1/denominator`` (the smallest positive role count)."""

    lead_replicas: int
    lead_count: int
    denominator: int

    def limit(self, count: int) -> int:
        """``min(count, floor(count·(lead_replicas/lead_count + 1/denominator)))``.

        Split into whole replicas and a remainder so no product of three replica counts is formed
        (upstream does this to stay inside int64; kept so rounding is identical).
        """
        if count <= 0:
            return 0
        scaled = count * self.lead_replicas
        whole, remainder = divmod(scaled, self.lead_count)
        extra = (remainder * self.denominator + count * self.lead_count) // (
            self.lead_count * self.denominator
        )
        return min(count, whole + extra)


def _window_of(counts: Sequence[int], progress: Sequence[int]) -> _Window | None:
    lead_replicas = lead_count = denominator = 0
    for count, done in zip(counts, progress, strict=True):
        if count <= 0:
            continue
        if denominator == 0 or count < denominator:
            denominator = count
        # done/count < lead_replicas/lead_count, compared without division
        if lead_count == 0 or done * lead_count < lead_replicas * count:
            lead_replicas, lead_count = done, count
    if lead_count == 0:
        return None
    return _Window(lead_replicas, lead_count, denominator)


def _bound_growth_to_window(
    current: Sequence[int], targets: Sequence[int], proposed: Sequence[int]
) -> ReplicaCounts:
    """Cap proposed growth at the window; never below what is already requested."""
    window = _window_of(targets, proposed)
    if window is None:
        return list(proposed)
    return [
        max(have, min(want, window.limit(count)))
        for have, count, want in zip(current, targets, proposed, strict=True)
    ]


def _bound_drain_to_window(
    current_old: Sequence[int], initial_old: Sequence[int], proposed_old: Sequence[int]
) -> ReplicaCounts:
    """Cap proposed drain at the window (progress = replicas removed from the baseline); never
    scales an old role back up."""
    drained = [
        max(0, initial - min(want, initial)) for initial, want in zip(initial_old, proposed_old, strict=True)
    ]
    window = _window_of(initial_old, drained)
    if window is None:
        return list(proposed_old)
    bounded = []
    for have, initial, want in zip(current_old, initial_old, proposed_old, strict=True):
        keep_at_least = max(0, initial - window.limit(initial))
        bounded.append(min(have, max(want, keep_at_least)))
    return bounded


# --------------------------------------------------------------------------------------------------
# hard limits
# --------------------------------------------------------------------------------------------------


def hard_new_limits(snapshot: Sequence[RoleSnapshot]) -> ReplicaCounts:
    """The largest new-revision Spec each role may have right now: within the surge ceiling
    ``max(initial, target) + maxSurge - oldSpec`` and no further than the projected
    ``maxSurge + maxUnavailable`` ahead of new Ready; never below the current new Spec."""
    budget_steps = max((max(role.initial_old, role.new_target) for role in snapshot), default=0)
    limits = []
    for role in snapshot:
        role_count = max(role.initial_old, role.new_target)
        by_surge = role_count + role.budget.max_surge - role.old_spec
        pending = _projected_budget(
            role_count, role.budget.max_surge + role.budget.max_unavailable, budget_steps
        )
        limit = min(by_surge, role.new_ready + pending)
        limits.append(max(role.new_spec, min(role.new_target, limit)))
    return limits


def max_safe_drain(role: RoleSnapshot) -> int:
    """How many old replicas may go without crossing ``max(0, min(initial, target) - maxUnavailable)``
    Ready replicas (J9). Once the new revision alone meets the floor, every old replica may go,
    which also cleans up old replicas that are not ready anyway."""
    floor = max(0, min(role.initial_old, role.new_target) - role.budget.max_unavailable)
    if role.new_ready >= floor:
        return role.old_spec
    above_floor = max(0, role.old_ready + role.new_ready - floor)
    return min(role.old_spec, above_floor)


# --------------------------------------------------------------------------------------------------
# the step
# --------------------------------------------------------------------------------------------------


def _changed(past: Sequence[int], new: Sequence[int], old_now: Sequence[int], new_now: Sequence[int]) -> bool:
    return list(past) != list(old_now) or list(new) != list(new_now)


def _complete(old_now: Sequence[int], new_now: Sequence[int], targets: Sequence[int]) -> bool:
    return all(old == 0 and new >= target for old, new, target in zip(old_now, new_now, targets, strict=True))


def is_spec_complete(snapshot: Sequence[RoleSnapshot]) -> bool:
    """Every old Spec is 0 and every new Spec reached its target."""
    return all(role.old_spec == 0 and role.new_spec >= role.new_target for role in snapshot)


def is_ready_complete(snapshot: Sequence[RoleSnapshot]) -> bool:
    """Every old Spec is 0 and every new role is Ready at its target (the executor's test)."""
    return all(role.old_spec == 0 and role.new_ready >= role.new_target for role in snapshot)


def _fractional_proposal(
    initial_old: Sequence[int],
    old_now: Sequence[int],
    new_now: Sequence[int],
    targets: Sequence[int],
    budgets: Sequence[Budget],
) -> tuple[ReplicaCounts, ReplicaCounts] | None:
    """The Spec-based schedule before readiness is looked at; None if complete/unchanged."""
    if _complete(old_now, new_now, targets):
        return None
    new_steps = step_count(targets)
    old_steps = step_count(initial_old)
    new_at = _least_advanced_step(new_now, targets, new_steps, draining=False)
    old_at = _least_advanced_step(old_now, initial_old, old_steps, draining=True)
    # One step per side, but the new side catches up when the old side already drained further.
    next_new = min(max(new_at + 1, _project_step(old_at, old_steps, new_steps)), new_steps)
    next_old = min(old_at + 1, old_steps)
    # One shared look-ahead: the largest budget, so a small role budget does not slow every role;
    # each role's own ceiling and floor below still apply.
    surge = max((b.max_surge for b in budgets), default=0)
    unavailable = max((b.max_unavailable for b in budgets), default=0)
    new_step = min(next_new + surge, new_steps)
    old_step = min(next_old + unavailable, old_steps)
    budget_steps = max(new_steps, old_steps)

    past: ReplicaCounts = []
    new: ReplicaCounts = []
    for initial, old, have, target, budget in zip(
        initial_old, old_now, new_now, targets, budgets, strict=True
    ):
        role_count = max(initial, target)
        ceiling = role_count + _projected_budget(role_count, budget.max_surge, budget_steps)
        floor = max(
            0, min(initial, target) - _projected_budget(role_count, budget.max_unavailable, budget_steps)
        )
        if budget.max_surge == 0 and budget.max_unavailable == 0:
            # No budget at all leaves no room for a replacement: one provisional slot in the Spec
            # proposal; the hard limits still apply before anything is executed.
            ceiling += 1
        total = old + have
        want_new = _wanted(target, new_step, new_steps, draining=False)
        want_old = _wanted(initial, old_step, old_steps, draining=True)
        grow = min(max(want_new - have, 0), max(0, ceiling - total))
        drain = min(max(0, old - want_old), max(0, total - floor))
        past.append(old - drain)
        new.append(have + grow)
    if not _changed(past, new, old_now, new_now):
        return None
    # Per-role ceilings and floors trim the shared step differently; re-apply the window.
    new = _bound_growth_to_window(new_now, targets, new)
    past = _bound_drain_to_window(old_now, initial_old, past)
    if not _changed(past, new, old_now, new_now):
        return None
    return past, new


def next_step(snapshot: Sequence[RoleSnapshot], parked_ready: Sequence[int] | None = None) -> Step | None:
    """One safe rollout step, or None when complete or waiting for state to change.

    ``parked_ready`` holds, per role, the Ready replicas of old revisions other than the one being
    drained; they still serve, so the new revision's phase target is reduced by them.
    """
    initial_old = [role.initial_old for role in snapshot]
    old_now = [role.old_spec for role in snapshot]
    new_now = [role.new_spec for role in snapshot]
    targets = [role.new_target for role in snapshot]
    budgets = [role.budget for role in snapshot]
    if parked_ready is not None:
        for i, parked in enumerate(parked_ready[: len(targets)]):
            targets[i] = max(new_now[i], targets[i] - parked)

    proposal = _fractional_proposal(initial_old, old_now, new_now, targets, budgets)
    if proposal is None:
        return None
    past, new = proposal

    limits = hard_new_limits(snapshot)
    new = [
        max(role.new_spec, min(want, limit)) for role, want, limit in zip(snapshot, new, limits, strict=True)
    ]
    new = _bound_growth_to_window(new_now, targets, new)
    past = [
        role.old_spec - min(max(0, role.old_spec - want), max_safe_drain(role))
        for role, want in zip(snapshot, past, strict=True)
    ]
    past = _bound_drain_to_window(old_now, initial_old, past)
    if not _changed(past, new, old_now, new_now):
        return None
    return Step(tuple(past), tuple(new))


def compute_all_steps(initial: Sequence[int], target: Sequence[int], budgets: Sequence[Budget]) -> list[Step]:
    """Upstream's ``ComputeAllSteps`` harness: every step fed back as both Spec and Ready, starting
    from the old revision fully ready and the new one empty, at most ``4·max(step counts)+10``
    iterations. The first element is the starting state."""
    snapshot = [
        RoleSnapshot(
            initial_old=old,
            old_spec=old,
            old_ready=old,
            new_spec=0,
            new_ready=0,
            new_target=want,
            budget=budget,
        )
        for old, want, budget in zip(initial, target, budgets, strict=True)
    ]
    steps = [Step(tuple(initial), tuple(0 for _ in initial))]
    for _ in range(max(step_count(initial), step_count(target)) * 4 + 10):
        step = next_step(snapshot)
        if step is None:
            break
        steps.append(step)
        snapshot = [
            RoleSnapshot(
                initial_old=role.initial_old,
                old_spec=past,
                old_ready=past,
                new_spec=new,
                new_ready=new,
                new_target=role.new_target,
                budget=role.budget,
            )
            for role, past, new in zip(snapshot, step.past, step.new, strict=True)
        ]
    return steps
