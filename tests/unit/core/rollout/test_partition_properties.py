"""Properties of the rollout arithmetic over generated states (hypothesis)."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from leaderworkerset.core.groups.state import GroupState
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    plan_rollout,
    plan_rollout_for,
)
from tests.support.builders import cached_lws, leader_pod
from tests.unit.core.rollout.world import World

states_st = st.lists(st.builds(GroupState, ready=st.booleans(), updated=st.booleans()), max_size=10)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[RolloutBudget, LeaderStatefulSetView, list[GroupState], bool]:
    replicas = draw(st.integers(0, 8))
    budget = RolloutBudget(
        replicas=replicas,
        surge=draw(st.integers(0, replicas)),
        unavailable=draw(st.integers(0, 8)),
        user_partition=draw(st.integers(0, 8)),
    )
    states = draw(states_st)
    sts = LeaderStatefulSetView(
        replicas=len(states),
        partition=draw(st.integers(0, len(states))),
        replicas_annotation=str(draw(st.sampled_from([replicas, replicas + 1, max(replicas - 1, 0)]))),
    )
    return budget, sts, states, draw(st.booleans())


def _pods(states: list[GroupState]) -> list[dict[str, object]]:
    return [
        leader_pod("lws", i, "new" if s.updated else "old", ready=s.ready)
        for i, s in enumerate(states)
        if s != GroupState(False, False)
    ]


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_bounds(scenario: tuple[RolloutBudget, LeaderStatefulSetView, list[GroupState], bool]) -> None:
    budget, sts, states, revision_created = scenario
    decision = plan_rollout(
        lws_name="lws",
        budget=budget,
        size=1,
        sts=sts,
        revision_key="new",
        revision_created=revision_created,
        leader_pods=_pods(states),
    )
    # The user's partition is a floor; replicas stay between spec.replicas and the burst.
    assert decision.partition >= budget.user_partition
    assert budget.replicas <= decision.replicas <= budget.burst
    raw = plan_rollout(
        lws_name="lws",
        budget=replace(budget, user_partition=0),
        size=1,
        sts=sts,
        revision_key="new",
        revision_created=revision_created,
        leader_pods=_pods(states),
    )
    if not revision_created:
        # Only a new revision resets the partition; otherwise it never moves up (the floor aside).
        assert raw.partition <= sts.partition
    # Surge reclaim is announced exactly when replicas go down.
    assert bool(decision.events) == (decision.replicas < sts.replicas)


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(1, 6),
    surge=st.integers(0, 3),
    unavailable=st.integers(0, 3),
    readiness=st.lists(st.lists(st.integers(0, 8), max_size=3), min_size=40, max_size=40),
)
def test_every_rollout_completes(
    replicas: int, surge: int, unavailable: int, readiness: list[list[int]]
) -> None:
    """Whatever order groups become ready in, the rollout ends at partition 0, spec.replicas groups,
    all on the new revision (webhook rule: maxSurge and maxUnavailable are not both zero)."""
    if surge == 0 and unavailable == 0:
        unavailable = 1
    lws = cached_lws("lws").replicas(replicas).max_surge(surge).max_unavailable(unavailable).obj()
    world = World("lws", 1, replicas, replicas_annotation=replicas, update_revision="A", current_revision="A")
    world.statefulset_controller()
    world.mark_ready(*range(replicas))
    world.update_revision = "B"
    revision_created = True
    for ready_now in readiness:
        _step(world, lws, revision_created)
        revision_created = False
        pending = sorted(o for o, g in world.groups.items() if not g.ready)
        # At least one pending group gets ready per round, so progress is always possible.
        chosen = {pending[i % len(pending)] for i in ready_now} | set(pending[:1]) if pending else set()
        world.mark_ready(*chosen)
    _step(world, lws, False)
    assert (world.partition, world.sts_replicas) == (0, replicas)
    assert all(g.revision == "B" and g.ready for g in world.groups.values())


def _step(world: World, lws: dict[str, object], revision_created: bool) -> tuple[int, int]:
    decision = plan_rollout_for(
        lws,
        world.sts_obj(),
        revision_key=world.update_revision,
        revision_created=revision_created,
        leader_pods=world.leader_pods(),
        statefulsets=world.statefulsets(),
    )
    world.partition, world.sts_replicas = decision.partition, decision.replicas
    world.statefulset_controller()
    return decision.partition, decision.replicas
