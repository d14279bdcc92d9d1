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

A set whose ``spec.scalingPolicy.duringRollout`` is ``AdvanceRollout`` (upstream main after v1.0,
KEP-1022) applies a new replica target mid-rollout instead of after it: the latest target is the
baseline of both the surge ceiling and the availability floor; an old replica beyond the physical
ceiling ``target + maxSurge`` may drain ahead of the fractional schedule (availability permitting);
only when no old replica can drain does the new revision shrink towards a lower target, and only as
far as Ready replicas (old or new) keep the floor; once the old revisions are drained the new one
goes straight to its target, shrinking within the same floor. The rollout ends at exactly the target.
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
    # The set scales during its rollout (``AdvanceRollout``); every role of one snapshot agrees.
    advance: bool = False

    def surge_baseline(self) -> int:
        """What the surge ceiling is counted from: the latest target while advancing, else the
        larger of the old baseline and the target."""
        return self.new_target if self.advance else max(self.initial_old, self.new_target)

    def availability_floor(self) -> int:
        """The Ready replicas (old and new) the role keeps: the latest target while advancing, else
        the smaller of the old baseline and the target; less maxUnavailable."""
        baseline = self.new_target if self.advance else min(self.initial_old, self.new_target)
        return max(0, baseline - self.budget.max_unavailable)


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
    ``surge baseline + maxSurge - oldSpec`` and no further than the projected
    ``maxSurge + maxUnavailable`` ahead of new Ready; never below the current new Spec."""
    budget_steps = max((max(role.initial_old, role.new_target) for role in snapshot), default=0)
    limits = []
    for role in snapshot:
        role_count = max(role.initial_old, role.new_target)
        by_surge = role.surge_baseline() + role.budget.max_surge - role.old_spec
        pending = _projected_budget(
            role_count, role.budget.max_surge + role.budget.max_unavailable, budget_steps
        )
        limit = min(by_surge, role.new_ready + pending)
        limits.append(max(role.new_spec, min(role.new_target, limit)))
    return limits


def max_safe_drain(role: RoleSnapshot) -> int:
    """How many old replicas may go without crossing the availability floor (J9). Once the new
    revision alone meets the floor, every old replica may go, which also cleans up old replicas
    that are not ready anyway."""
    floor = role.availability_floor()
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


def _at_target(role: RoleSnapshot) -> bool:
    # A set that scales during its rollout finishes at exactly its target; v1.0's rollout leaves a
    # lowered target to the scaling that follows it.
    return role.new_spec == role.new_target if role.advance else role.new_spec >= role.new_target


def is_spec_complete(snapshot: Sequence[RoleSnapshot]) -> bool:
    """Every old Spec is 0 and every new Spec reached its target."""
    return all(role.old_spec == 0 and _at_target(role) for role in snapshot)


def is_ready_complete(snapshot: Sequence[RoleSnapshot]) -> bool:
    """Every old Spec is 0 and every new role is Ready at its target (the executor's test)."""
    return all(
        role.old_spec == 0 and _at_target(role) and role.new_ready >= role.new_target for role in snapshot
    )


def _fractional_proposal(
    snapshot: Sequence[RoleSnapshot],
    old_now: Sequence[int],
    new_now: Sequence[int],
    targets: Sequence[int],
) -> tuple[ReplicaCounts, ReplicaCounts] | None:
    """The Spec-based schedule before readiness is looked at; None if complete/unchanged."""
    initial_old = [role.initial_old for role in snapshot]
    budgets = [role.budget for role in snapshot]
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
    for role, old, have, target in zip(snapshot, old_now, new_now, targets, strict=True):
        initial, budget = role.initial_old, role.budget
        role_count = max(initial, target)
        surge_baseline = target if role.advance else role_count
        ceiling = surge_baseline + _projected_budget(role_count, budget.max_surge, budget_steps)
        floor_baseline = target if role.advance else min(initial, target)
        floor = max(0, floor_baseline - _projected_budget(role_count, budget.max_unavailable, budget_steps))
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
    old_now = [role.old_spec for role in snapshot]
    new_now = [role.new_spec for role in snapshot]
    advance = any(role.advance for role in snapshot)
    if advance and not any(old_now):
        new = [_converged_target(role) for role in snapshot]
        return Step(tuple(old_now), tuple(new)) if new != new_now else None
    past, new = _rollout_step(snapshot, parked_ready) or (old_now, new_now)
    if advance:
        past = [
            min(want, role.old_spec - _excess_drain(role)) for role, want in zip(snapshot, past, strict=True)
        ]
        if past == old_now:
            # Every old drain waits on readiness: only now may the new revision give back replicas.
            new = [
                _shrunk_target(role) if role.new_spec > role.new_target else want
                for role, want in zip(snapshot, new, strict=True)
            ]
    if not _changed(past, new, old_now, new_now):
        return None
    return Step(tuple(past), tuple(new))


def _rollout_step(
    snapshot: Sequence[RoleSnapshot], parked_ready: Sequence[int] | None
) -> tuple[ReplicaCounts, ReplicaCounts] | None:
    """v1.0's step: the fractional schedule, then the hard limits and the availability floor."""
    initial_old = [role.initial_old for role in snapshot]
    old_now = [role.old_spec for role in snapshot]
    new_now = [role.new_spec for role in snapshot]
    targets = [role.new_target for role in snapshot]
    if parked_ready is not None:
        for i, parked in enumerate(parked_ready[: len(targets)]):
            targets[i] = max(new_now[i], targets[i] - parked)

    proposal = _fractional_proposal(snapshot, old_now, new_now, targets)
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
    return past, new


# --------------------------------------------------------------------------------------------------
# scaling during the rollout (AdvanceRollout)
# --------------------------------------------------------------------------------------------------


def _excess_drain(role: RoleSnapshot) -> int:
    """Old replicas beyond the physical ceiling ``target + maxSurge`` (a lowered target leaves
    them), which may go ahead of the fractional schedule as far as availability allows."""
    excess = max(0, role.old_spec + role.new_spec - (role.new_target + role.budget.max_surge))
    return min(excess, max_safe_drain(role))


def _removable_new(role: RoleSnapshot) -> int:
    """New replicas that may go without crossing the availability floor, the old revisions standing
    in as replacement capacity: only Ready replicas authorise a reduction, and any removed replica
    may be a Ready one."""
    floor = role.availability_floor()
    if role.old_ready >= floor:
        return role.new_spec
    return min(role.new_spec, max(0, role.old_ready + role.new_ready - floor))


def _shrunk_target(role: RoleSnapshot) -> int:
    """The new revision's Spec towards a lower target while old replicas remain: what the surge
    ceiling leaves room for beside them, one replica kept while the role is wanted at all."""
    want = min(role.new_spec, max(0, role.new_target + role.budget.max_surge - role.old_spec))
    if role.new_target > 0:
        want = max(want, 1)
    return max(want, role.new_spec - _removable_new(role))


def _converged_target(role: RoleSnapshot) -> int:
    """With every old revision drained: the target, reached at once when growing, and within the
    availability floor when shrinking."""
    if role.new_spec <= role.new_target:
        return role.new_target
    return max(role.new_target, role.new_spec - _removable_new(role))


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
