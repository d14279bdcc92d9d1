"""Scaling during a rollout (`spec.scalingPolicy.duringRollout: AdvanceRollout`, upstream main after
v1.0, KEP-1022): the planner's decisions as upstream main's cases state them (surge 1 and
unavailable 0 unless a row says otherwise), then the executor's decisions on child views."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import upstreammain as um
from leaderworkerset.core.disaggregated.planner import Budget, RoleSnapshot, next_step
from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget, decide_rollout
from leaderworkerset.core.disaggregated.rollout_inputs import scales_during_rollout
from leaderworkerset.core.disaggregated.simulation import simulate_ds_rollout
from tests.unit.core.disaggregated.test_rollout import T0, T1, T2, D, P, applied, kid, lws, static

Pair = tuple[int, int]


@dataclass(frozen=True)
class Case:
    """Old and new revision per role (Spec, Ready), the latest targets and the wanted Spec after
    one step (None: no step)."""

    old: Pair
    old_ready: Pair
    new: Pair
    new_ready: Pair
    desired: Pair
    want: tuple[Pair, Pair] | None
    initial: Pair | None = None  # the old baseline; its Spec when not given
    surge: Pair = (1, 1)
    unavailable: Pair = (0, 0)


def _snapshot(case: Case, *, advance: bool) -> list[RoleSnapshot]:
    initial = case.initial or case.old
    return [
        RoleSnapshot(
            initial_old=initial[i],
            old_spec=case.old[i],
            old_ready=case.old_ready[i],
            new_spec=case.new[i],
            new_ready=case.new_ready[i],
            new_target=case.desired[i],
            budget=Budget(case.surge[i], case.unavailable[i]),
            advance=advance,
        )
        for i in range(2)
    ]


CASES = [
    pytest.param(Case((4, 4), (4, 4), (5, 5), (5, 5), (4, 4), ((0, 0), (5, 5))), id="old first"),
    pytest.param(
        Case((4, 4), (4, 4), (5, 5), (0, 0), (4, 4), ((4, 4), (1, 1))), id="unready target absorbs excess"
    ),
    pytest.param(
        Case((0, 0), (0, 0), (5, 3), (5, 3), (4, 2), ((0, 0), (4, 2))), id="exact target after old drains"
    ),
    pytest.param(
        Case((0, 0), (0, 0), (2, 3), (2, 3), (0, 0), ((0, 0), (0, 0))), id="a zero target really reaches zero"
    ),
    pytest.param(
        Case((0, 0), (0, 0), (1, 5), (0, 4), (1, 4), None), id="first unready role cannot hide a later drain"
    ),
    pytest.param(
        Case((0, 0), (0, 0), (1, 5), (0, 5), (1, 4), ((0, 0), (1, 4))),
        id="per-role readiness remains independent",
    ),
    pytest.param(
        Case((0, 0), (0, 0), (1, 5), (0, 4), (2, 4), ((0, 0), (2, 5))),
        id="growth creates no readiness credit",
    ),
    pytest.param(
        Case((0, 0), (0, 0), (4, 8), (4, 8), (8, 4), ((0, 0), (8, 4))), id="opposing target changes"
    ),
    pytest.param(
        Case((4, 4), (4, 4), (1, 1), (1, 1), (8, 8), ((4, 4), (2, 2))), id="raised floor preserves old ready"
    ),
    pytest.param(
        Case((8, 8), (8, 8), (2, 2), (0, 0), (12, 12), ((8, 8), (4, 4)), surge=(2, 2), unavailable=(2, 2)),
        id="grow while previous batch is unready",
    ),
    pytest.param(
        Case((0, 0), (0, 0), (5, 5), (4, 4), (3, 3), ((0, 0), (4, 4))),
        id="target drain uses retained readiness",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_advance_rollout_step(case: Case) -> None:
    step = next_step(_snapshot(case, advance=True))
    got = None if step is None else (step.past, step.new)
    assert got == case.want


def test_advance_rollout_case_count() -> None:
    assert len(CASES) == 11


@pytest.mark.parametrize("case", CASES)
def test_rollout_coupled_never_shrinks_the_new_revision(case: Case) -> None:
    """The same states under v1.0's rule: a lower target waits for the rollout's end."""
    snapshot = _snapshot(case, advance=False)
    step = next_step(snapshot)
    if step is not None:
        assert all(new >= role.new_spec for new, role in zip(step.new, snapshot, strict=True))


# --------------------------------------------------------------------------------------------------
# the executor
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "advances"),
    [
        (None, False),
        ({}, False),
        ({"duringRollout": um.SCALING_ROLLOUT_COUPLED}, False),
        ({"duringRollout": um.SCALING_ADVANCE_ROLLOUT}, True),
    ],
)
def test_only_advance_rollout_scales_during_the_rollout(
    policy: dict[str, str] | None, advances: bool
) -> None:
    spec: dict[str, object] = {"roles": []}
    if policy is not None:
        spec["scalingPolicy"] = policy
    ds = {"spec": spec}
    assert scales_during_rollout(ds) is advances


def _drained_old_and_ready_target() -> list[ChildView]:
    # The old revision already at 0 (its baseline 5,3), the target at 5,3 and Ready.
    return [
        kid("old", P, 0, initial=5, created=T0),
        kid("old", D, 0, initial=3, created=T0),
        kid("new", P, 5, initial=5, created=T1),
        kid("new", D, 3, initial=3, created=T1),
    ]


def test_a_lower_target_applies_before_the_rollout_ends_only_when_advancing() -> None:
    children = _drained_old_and_ready_target()
    roles = [static(P, 4), static(D, 2)]
    coupled = decide_rollout("new", roles, children)
    assert coupled.kind == "complete"  # v1.0: done; the scaling after it shrinks
    advancing = decide_rollout("new", roles, children, advance=True)
    assert advancing.kind == "scale"
    assert [(ch.lws, ch.from_replicas, ch.replicas) for ch in advancing.scale_down] == [
        (lws("new", P), 5, 4),
        (lws("new", D), 3, 2),
    ]
    assert advancing.scale_up == ()
    # Once there, the rollout completes at exactly the target.
    done = [
        kid(
            ch.revision,
            ch.role,
            applied(children, advancing)[ch.name],
            initial=ch.initial_replicas,
            created=ch.created,
        )
        for ch in children
    ]
    assert decide_rollout("new", roles, done, advance=True).kind == "complete"


def test_the_target_revision_shrinks_before_any_role_grows() -> None:
    children = [
        kid("old", P, 0, initial=4, created=T0),
        kid("old", D, 0, initial=8, created=T0),
        kid("new", P, 4, initial=4, created=T1),
        kid("new", D, 8, initial=8, created=T1),
    ]
    decision = decide_rollout("new", [static(P, 8), static(D, 4)], children, advance=True)
    assert [(ch.lws, ch.replicas) for ch in decision.scale_down] == [(lws("new", D), 4)]
    assert [(ch.lws, ch.replicas) for ch in decision.scale_up] == [(lws("new", P), 8)]
    assert decision.sync_initial == ((lws("new", P), 8), (lws("new", D), 4))


def test_any_old_drain_goes_before_a_target_shrink() -> None:
    children = [
        kid("hashA", P, 2, initial=3, created=T0),
        kid("hashA", D, 2, initial=3, created=T0),
        kid("hashB", P, 1, initial=3, created=T1),
        kid("hashB", D, 1, ready=0, initial=3, created=T1),
        kid("hashC", P, 3, ready=0, initial=2, created=T2),
        kid("hashC", D, 3, ready=0, initial=2, created=T2),
    ]
    decision = decide_rollout("hashC", [static(P, 2), static(D, 2)], children, advance=True)
    assert applied(children, decision) == {
        lws("hashA", P): 2,
        lws("hashA", D): 2,
        lws("hashB", P): 0,
        lws("hashB", D): 0,
        lws("hashC", P): 3,
        lws("hashC", D): 3,
    }


def test_an_external_role_lowered_mid_rollout_shrinks_only_when_advancing() -> None:
    external = [static(P, 2), RoleTarget(D, 2, external=True)]
    # The old revision keeps the floor of 2 alone, so no old replica may drain before new ones are Ready.
    children = [
        kid("old", P, 2, initial=4, created=T0),
        kid("old", D, 2, initial=4, created=T0),
        kid("new", P, 5, ready=0, initial=2, created=T1),
        kid("new", D, 5, ready=0, initial=2, created=T1),
    ]
    coupled = applied(children, decide_rollout("new", external, children))
    advancing = applied(children, decide_rollout("new", external, children, advance=True))
    assert coupled[lws("new", D)] == 5  # v1.0's guard: no shrink while the old revision drains
    # target + surge - old Spec = 1 beside the old revision's 2.
    assert (advancing[lws("old", D)], advancing[lws("new", D)]) == (2, 1)


def test_a_rollout_whose_target_drops_mid_way_ends_at_the_new_target_keeping_the_floor() -> None:
    # Half-way through 4,4 -> 4,4 the target drops to 2,2; every replica Ready as soon as asked.
    children = [
        kid("old", P, 2, initial=4, created=T0),
        kid("old", D, 2, initial=4, created=T0),
        kid("new", P, 3, initial=4, created=T1),
        kid("new", D, 3, initial=4, created=T1),
    ]
    roles = [static(P, 2), static(D, 2)]
    decisions = simulate_ds_rollout("new", roles, children, advance=True)
    assert decisions[-1].kind == "complete"
    state = {child.name: child.spec_replicas for child in children}
    for decision in decisions:
        for change in decision.scale_down:
            state[change.lws] = change.replicas
        # Between the writes (old and target shrinks applied, growth not yet): the floor holds.
        for role in (P, D):
            assert state[lws("old", role)] + state[lws("new", role)] >= 2
        for change in decision.scale_up:
            state[change.lws] = change.replicas
    assert (state[lws("new", P)], state[lws("new", D)]) == (2, 2)
    assert (state[lws("old", P)], state[lws("old", D)]) == (0, 0)
