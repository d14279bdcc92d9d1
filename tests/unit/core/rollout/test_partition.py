"""Rolling-update arithmetic of the leader StatefulSet (upstream's unit cases)."""

from dataclasses import dataclass, field

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.intstr import IntOrPercentError, scaled_value
from leaderworkerset.core.gocompat.strconv import GoParseError
from leaderworkerset.core.groups.state import GroupState
from leaderworkerset.core.rollout.partition import (
    LeaderStatefulSetView,
    RolloutBudget,
    after_apply_events,
    plan_rollout,
    plan_rollout_for,
    rolling_update_partition,
    rollout_budget,
    simulate_rollout,
    surge_reclaim_events,
    unready_count,
    want_replicas,
)
from tests.support.builders import (
    LeaderWorkerSetBuilder,
    cached_lws,
    leader_pod,
    leader_sts,
    worker_statefulset,
)
from tests.unit.core.rollout.world import World

R = GroupState(ready=True, updated=True)  # ready and updated
O = GroupState(ready=True, updated=False)  # ready, outdated  # noqa: E741
U = GroupState(ready=False, updated=True)  # updated, not ready yet
X = GroupState(ready=False, updated=False)  # missing or broken


@pytest.mark.parametrize(
    ("value", "total", "round_up", "want"),
    [
        pytest.param(2, 10, True, 2, id="int is taken as is"),
        pytest.param(7, 3, False, 7, id="int is not capped here"),
        pytest.param("50%", 3, True, 2, id="percent rounds up"),
        pytest.param("50%", 3, False, 1, id="percent rounds down"),
        pytest.param("25%", 4, False, 1, id="exact percent"),
        pytest.param("0%", 10, True, 0, id="zero percent"),
        pytest.param("100%", 7, False, 7, id="hundred percent"),
        pytest.param("1%", 0, True, 0, id="percent of zero replicas"),
        pytest.param("10%", 1_000_000, True, 100_000, id="large totals stay exact"),
        pytest.param("25%", 2, False, 0, id="25% of 2 rounds down"),
        pytest.param("25%", 2, True, 1, id="25% of 2 rounds up"),
        pytest.param("-5%", 10, False, -1, id="negative percentage floors away from zero"),
        pytest.param("-5%", 10, True, 0, id="negative percentage ceils towards zero"),
        pytest.param("33%", 2**31 - 1, True, 708_669_604, id="int32 total rounds as Go's float64 does"),
    ],
)
def test_scaled_value(value: int | str, total: int, round_up: bool, want: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == want


@pytest.mark.parametrize(
    ("value", "want_message"),
    [
        pytest.param(
            "5", "invalid value for IntOrString: invalid type: string is not a percentage", id="no suffix"
        ),
        pytest.param(
            "x%",
            'invalid value for IntOrString: invalid value "x%": strconv.Atoi: parsing "x": invalid syntax',
            id="not a number",
        ),
    ],
)
def test_scaled_value_rejects(value: str, want_message: str) -> None:
    with pytest.raises(IntOrPercentError) as err:
        scaled_value(value, 4, round_up=True)
    assert str(err.value) == want_message


@pytest.mark.parametrize(
    ("builder", "want"),
    [
        pytest.param(cached_lws().replicas(4), RolloutBudget(4, 0, 1, 0), id="webhook defaults"),
        pytest.param(
            cached_lws().replicas(2).max_surge("50%").max_unavailable(1),
            RolloutBudget(2, 1, 1, 0),
            id="percent surge",
        ),
        pytest.param(
            cached_lws().replicas(2).max_surge(5), RolloutBudget(2, 2, 1, 0), id="surge capped at replicas"
        ),
        pytest.param(
            cached_lws().replicas(5).max_unavailable("50%").partition(3),
            RolloutBudget(5, 0, 2, 3),
            id="floor percent",
        ),
        pytest.param(
            cached_lws().replicas(0).max_surge(1), RolloutBudget(0, 0, 1, 0), id="zero replicas no surge"
        ),
    ],
)
def test_rollout_budget(builder: LeaderWorkerSetBuilder, want: RolloutBudget) -> None:
    assert rollout_budget(builder.obj()) == want


@pytest.mark.parametrize(
    ("builder", "want_message"),
    [
        pytest.param(
            cached_lws().max_surge("abc"),
            "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: "
            "invalid value for IntOrString: invalid type: string is not a percentage",
            id="surge",
        ),
        pytest.param(
            cached_lws().max_unavailable("1.5%"),
            "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: "
            'invalid value for IntOrString: invalid value "1.5%": '
            'strconv.Atoi: parsing "1.5": invalid syntax',
            id="unavailable",
        ),
    ],
)
def test_rollout_budget_errors_name_the_field(builder: LeaderWorkerSetBuilder, want_message: str) -> None:
    """An LWS stored without our webhook reaches the controller; its report names the field."""
    with pytest.raises(IntOrPercentError) as err:
        rollout_budget(builder.obj())
    assert str(err.value) == want_message


@pytest.mark.parametrize(
    ("surge", "unavailable", "want"),
    [
        pytest.param(1, 2, 3, id="leader sts maxUnavailable is unavailable plus surge"),
        pytest.param(0, 0, 1, id="never below one"),
    ],
)
def test_statefulset_max_unavailable(surge: int, unavailable: int, want: int) -> None:
    assert RolloutBudget(4, surge, unavailable, 0).statefulset_max_unavailable == want


# Upstream's TestCalculateRollingUpdateReplicas, row for row.
@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "unready", "want"),
    [
        pytest.param(1, 1, 0, 1, 2, id="keeps surge until maxUnavailable covers the unready groups"),
        pytest.param(4, 2, 1, 2, 5, id="reclaims surge gradually once enough groups are ready"),
        pytest.param(2, 2, 1, 2, 3, id="reclaims surge before the partition reaches zero"),
        pytest.param(1, 1, 0, 0, 1, id="back to replicas when all groups are ready"),
        pytest.param(1, 1, 1, 1, 1, id="reclaims surge when maxUnavailable permits an unready group"),
        pytest.param(3, 0, 0, 1, 3, id="no surge when maxSurge is zero"),
        pytest.param(4, 2, 1, 3, 6, id="whole burst while unready exceeds surge"),
    ],
)
def test_want_replicas(replicas: int, surge: int, unavailable: int, unready: int, want: int) -> None:
    assert want_replicas(RolloutBudget(replicas, surge, unavailable, 0), unready) == want


@pytest.mark.parametrize(
    ("states", "replicas", "want"),
    [
        pytest.param([R, R, R], 3, 0, id="all ready and updated"),
        pytest.param([O, U, X], 3, 3, id="outdated, unready and missing all count"),
        pytest.param([R, R], 4, 2, id="ordinals not yet created count as unready"),
        pytest.param([R, R, X], 2, 0, id="surge ordinals are not counted"),
    ],
)
def test_unready_count(states: list[GroupState], replicas: int, want: int) -> None:
    assert unready_count(states, replicas) == want


@pytest.mark.parametrize(
    ("states", "step", "current", "want"),
    [
        pytest.param([O, O, O, O], 1, 4, 3, id="first step releases the top ordinal"),
        pytest.param([O, O, O, R], 1, 3, 2, id="next step once the tail is ready"),
        pytest.param([O, O, O, U], 1, 3, 3, id="waits while the released group is not ready"),
        pytest.param([O, O, O, O], 2, 4, 2, id="step of two"),
        pytest.param([X, O, O, O], 1, 4, 4, id="an unready group below the base already uses the budget"),
        pytest.param(
            [O, X, O, O], 2, 4, 3, id="upstream: rolling update with unhealthy pods below partition"
        ),
        pytest.param([X, X], 1, 2, 1, id="upstream: rolling update with no ready replicas"),
        pytest.param([X, X, X, X], 1, 4, 3, id="no ready groups: lowered over the unready top"),
        pytest.param([O, O, X, X], 1, 4, 3, id="lowered over an unready group down to the base only"),
        pytest.param([O, O, R, R], 1, 1, 1, id="never moves up"),
        pytest.param([O, O, O, O, U, U], 4, 4, 2, id="surge groups count against the step"),
        pytest.param([], 1, 0, 0, id="empty statefulset"),
    ],
)
def test_rolling_update_partition(states: list[GroupState], step: int, current: int, want: int) -> None:
    assert rolling_update_partition(states, len(states), step, current) == want


@dataclass(frozen=True)
class PlanCase:
    """One call of plan_rollout: the LWS, the leader StatefulSet and the groups per ordinal."""

    lws: LeaderWorkerSetBuilder
    sts: LeaderStatefulSetView | None
    want_partition: int
    want_replicas: int
    revision_created: bool = False
    groups: list[GroupState] = field(default_factory=list)
    want_messages: tuple[str, ...] = ()


def _pods_for(states: list[GroupState], size: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    pods, stss = [], []
    for idx, state in enumerate(states):
        if state == X:
            continue
        pod = leader_pod("test-sample", idx, "new" if state.updated else "old", ready=state.ready)
        pods.append(pod)
        if size > 1:
            stss.append(worker_statefulset(pod, ready=state.ready))
    return pods, stss


def _view(replicas: int, partition: int, annotation: str | None) -> LeaderStatefulSetView:
    return LeaderStatefulSetView(replicas=replicas, partition=partition, replicas_annotation=annotation)


PLAN_CASES = [
    pytest.param(PlanCase(cached_lws().replicas(3), None, 0, 3), id="no statefulset yet"),
    pytest.param(PlanCase(cached_lws().replicas(3).partition(2), None, 2, 3), id="user partition is a floor"),
    pytest.param(PlanCase(cached_lws().replicas(3), _view(3, 0, "3"), 0, 3), id="steady state"),
    pytest.param(
        PlanCase(
            cached_lws().replicas(3).max_unavailable(0).max_surge(1), _view(2, 0, "2"), 0, 3, groups=[R, R]
        ),
        id="upstream: scale up does not create extra surge",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(3).max_unavailable(0).max_surge(1),
            _view(2, 0, "2"),
            2,
            3,
            revision_created=True,
            groups=[O, O],
        ),
        id="upstream: scale up with template update does not create extra surge",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(2).max_unavailable(1).max_surge(2),
            _view(2, 0, "2"),
            2,
            3,
            revision_created=True,
            groups=[O, O],
        ),
        id="upstream: template update reclaims surge when allowed",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(4).max_surge(1),
            _view(4, 0, "4"),
            4,
            5,
            revision_created=True,
            groups=[O] * 4,
        ),
        id="template update starts with the burst",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(2),
            _view(4, 0, "4"),
            2,
            2,
            revision_created=True,
            groups=[O] * 4,
            want_messages=("deleting surge replicas from test-sample-2 to test-sample-3",),
        ),
        id="template update with scale down starts together",
    ),
    pytest.param(
        PlanCase(cached_lws().replicas(5), _view(3, 2, "3"), 2, 5, groups=[O, O, R]),
        id="scale up mid rollout keeps the partition",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(3),
            _view(4, 3, "4"),
            3,
            3,
            groups=[O, O, O, R],
            # Upstream announces any replica decrease with the surge wording, scale-downs included.
            want_messages=("deleting surge replica test-sample-3",),
        ),
        id="scale down mid rollout holds the partition",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(2).max_surge(1),
            _view(5, 4, "4"),
            3,
            3,
            groups=[O, O, O, O, U],
            want_messages=("deleting surge replicas from test-sample-3 to test-sample-4",),
        ),
        id="replicas changed mid rollout clamps the partition to the new burst",
    ),
    pytest.param(
        PlanCase(cached_lws().replicas(4), _view(4, 4, "4"), 3, 4, groups=[O, O, O, O]),
        id="rolling step of one",
    ),
    pytest.param(
        PlanCase(cached_lws().replicas(4).max_surge(1), _view(5, 4, "4"), 3, 5, groups=[O, O, O, O, U]),
        id="surge group not ready yet",
    ),
    pytest.param(
        PlanCase(
            cached_lws().replicas(4).max_surge(1),
            _view(5, 0, "4"),
            0,
            4,
            groups=[R, R, R, R, R],
            want_messages=("deleting surge replica test-sample-4",),
        ),
        id="surge group reclaimed at the end",
    ),
    pytest.param(
        PlanCase(cached_lws().replicas(4).partition(2), _view(4, 4, "4"), 3, 4, groups=[O, O, O, O]),
        id="user partition below the computed one",
    ),
    pytest.param(
        PlanCase(cached_lws().replicas(4).partition(3), _view(4, 3, "4"), 3, 4, groups=[O, O, O, R]),
        id="user partition holds the rollout",
    ),
]


@pytest.mark.parametrize("case", PLAN_CASES)
@pytest.mark.parametrize("size", [1, 2], ids=["size 1", "size 2"])
def test_plan_rollout(case: PlanCase, size: int) -> None:
    pods, stss = _pods_for(case.groups, size)
    decision = plan_rollout_for(
        case.lws.size(size).obj(),
        None
        if case.sts is None
        else leader_sts(
            "test-sample",
            replicas=case.sts.replicas,
            partition=case.sts.partition,
            replicas_annotation=case.sts.replicas_annotation,
        ),
        revision_key="new",
        revision_created=case.revision_created,
        leader_pods=pods,
        statefulsets=stss,
    )
    assert (decision.partition, decision.replicas) == (case.want_partition, case.want_replicas)
    assert tuple(e.message for e in decision.events) == case.want_messages


@pytest.mark.parametrize(
    "annotation",
    [pytest.param(None, id="missing annotation"), pytest.param("x", id="non-integer annotation")],
)
def test_plan_rollout_fails_on_bad_replicas_annotation(annotation: str | None) -> None:
    with pytest.raises(GoParseError):
        plan_rollout(
            lws_name="test-sample",
            budget=RolloutBudget(2, 0, 1, 0),
            size=1,
            sts=_view(2, 2, annotation),
            revision_key="new",
            revision_created=False,
        )


def test_plan_rollout_reads_annotation_only_mid_rollout() -> None:
    decision = plan_rollout(
        lws_name="test-sample",
        budget=RolloutBudget(2, 0, 1, 0),
        size=1,
        sts=_view(2, 0, None),
        revision_key="new",
        revision_created=False,
    )
    assert (decision.partition, decision.replicas) == (0, 2)


def test_group_with_wrong_name_counts_as_missing() -> None:
    # A pod claiming group-index 1 but named like another set's pod must not count as ready.
    pods = [
        leader_pod("test-sample", 0, "old"),
        leader_pod("test-sample", 1, "old", name="other-1"),
    ]
    decision = plan_rollout(
        lws_name="test-sample",
        budget=RolloutBudget(2, 0, 1, 0),
        size=1,
        sts=_view(2, 2, "2"),
        revision_key="new",
        revision_created=False,
        leader_pods=pods,
    )
    # Ordinal 1 is missing (unready), so it is lowered over; ordinal 0 is ready and outdated.
    assert decision.partition == 1


@pytest.mark.parametrize(
    ("previous", "partition", "created", "want"),
    [
        pytest.param(
            None,
            0,
            True,
            [(c.EVENT_GROUPS_PROGRESSING, "Created leader statefulset test-sample")],
            id="create",
        ),
        pytest.param(
            _view(4, 4, "4"), 3, False, [(c.EVENT_GROUPS_UPDATING, "Updating replica 3")], id="one step"
        ),
        pytest.param(
            _view(4, 4, "4"),
            2,
            False,
            [(c.EVENT_GROUPS_UPDATING, "Updating replicas 2 to 3 (inclusive)")],
            id="two steps",
        ),
        pytest.param(_view(4, 4, "4"), 4, False, [], id="partition unchanged"),
        pytest.param(_view(4, 0, "4"), 4, True, [], id="not on the revision-creating reconcile"),
    ],
)
def test_after_apply_events(
    previous: LeaderStatefulSetView | None, partition: int, created: bool, want: list[tuple[str, str]]
) -> None:
    events = after_apply_events(
        lws_name="test-sample", previous=previous, partition=partition, revision_created=created
    )
    assert [(e.reason, e.message) for e in events] == want


def test_surge_reclaim_events_are_deletes() -> None:
    (event,) = surge_reclaim_events("lws", 6, 4)
    assert (event.type, event.reason, event.action) == (
        c.EVENT_TYPE_NORMAL,
        c.EVENT_GROUPS_PROGRESSING,
        c.EVENT_ACTION_DELETE,
    )
    assert event.message == "deleting surge replicas from lws-4 to lws-5"


# --- simulations: rollout tables reproduced step by step -----------------------------------------


def _reconcile(world: World, lws: dict[str, object], *, revision_created: bool = False) -> list[str]:
    """One LWS reconcile against the world, then the StatefulSet controller acting on it."""
    decision = plan_rollout_for(
        lws,
        world.sts_obj(),
        revision_key=world.update_revision,
        revision_created=revision_created,
        leader_pods=world.leader_pods(),
        statefulsets=world.statefulsets(),
    )
    world.partition, world.sts_replicas = decision.partition, decision.replicas
    world.replicas_annotation = int(lws["spec"]["replicas"])  # type: ignore[index]
    world.statefulset_controller()
    return [e.message for e in decision.events]


def _steady_world(size: int, replicas: int) -> World:
    world = World(
        "test-sample", size, replicas, replicas_annotation=replicas, update_revision="A", current_revision="A"
    )
    world.statefulset_controller()
    world.mark_ready(*range(replicas))
    return world


def _start_update(world: World, lws: dict[str, object]) -> list[str]:
    world.update_revision = "B"
    return _reconcile(world, lws, revision_created=True)


@pytest.mark.parametrize("size", [1, 3], ids=["size 1", "size 3"])
def test_rollout_strategy_doc_table(size: int) -> None:
    """The stage table of upstream's rollout-strategy page: replicas 4, maxUnavailable 2, maxSurge 2."""
    lws = cached_lws().replicas(4).size(size).max_unavailable(2).max_surge(2).obj()
    world = _steady_world(size, 4)
    stages: list[tuple[int, int, str]] = [(world.partition, world.sts_replicas, world.row())]
    assert stages[-1] == (0, 4, "✅ ✅ ✅ ✅")  # Stage1, before the update

    _start_update(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (4, 6, "❎ ❎ ❎ ❎ ⏳ ⏳")  # Stage2
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (2, 6, "❎ ❎ ⏳ ⏳ ⏳ ⏳")  # Stage3
    world.mark_ready(4)
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (
        2,
        6,
        "❎ ❎ ⏳ ⏳ ✅ ⏳",
    )  # Stage4: last not ready
    world.mark_ready(5)
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (0, 6, "⏳ ⏳ ⏳ ⏳ ✅ ✅")  # Stage5
    world.mark_ready(2, 3)
    assert (world.partition, world.sts_replicas, world.row()) == (0, 6, "⏳ ⏳ ✅ ✅ ✅ ✅")  # Stage6
    messages = _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (
        0,
        4,
        "⏳ ⏳ ✅ ✅",
    )  # Stage7: both surge reclaimed
    assert messages == ["deleting surge replicas from test-sample-4 to test-sample-5"]
    world.mark_ready(1)
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (0, 4, "⏳ ✅ ✅ ✅")  # Stage8
    world.mark_ready(0)
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas, world.row()) == (0, 4, "✅ ✅ ✅ ✅")  # Stage9


def test_spec_trace_surge_one_unavailable_one() -> None:
    """Upstream's example: replicas 4, maxSurge 1, maxUnavailable 1, every updated group ready before the next
    reconcile: (4, 5) → (2, 5) → (0, 5) → (0, 4) deleting `<lws>-4` → steady."""
    lws = cached_lws().replicas(4).max_unavailable(1).max_surge(1).obj()
    world = _steady_world(1, 4)
    trace = []
    messages: list[str] = _start_update(world, lws)
    for _ in range(6):
        trace.append((world.partition, world.sts_replicas))
        world.mark_ready(*world.groups)
        messages += _reconcile(world, lws)
    assert trace == [(4, 5), (2, 5), (0, 5), (0, 4), (0, 4), (0, 4)]
    assert messages == ["deleting surge replica test-sample-4"]
    assert world.row() == "✅ ✅ ✅ ✅"


@pytest.mark.parametrize(
    ("max_unavailable", "max_surge", "want_trace"),
    [
        pytest.param(1, 0, [(4, 4), (3, 4), (2, 4), (1, 4), (0, 4), (0, 4)], id="one at a time"),
        pytest.param(2, 0, [(4, 4), (2, 4), (0, 4), (0, 4)], id="two at a time"),
        pytest.param(0, 1, [(4, 5), (3, 5), (2, 5), (1, 5), (0, 5), (0, 4), (0, 4)], id="surge only"),
        pytest.param(4, 0, [(4, 4), (0, 4), (0, 4)], id="maxUnavailable equal to replicas"),
        pytest.param("50%", "50%", [(4, 6), (0, 6), (0, 4), (0, 4)], id="percentages"),
    ],
)
def test_rollout_traces(
    max_unavailable: int | str, max_surge: int | str, want_trace: list[tuple[int, int]]
) -> None:
    lws = cached_lws().replicas(4).max_unavailable(max_unavailable).max_surge(max_surge).obj()
    world = _steady_world(1, 4)
    _start_update(world, lws)
    trace = []
    for _ in range(len(want_trace)):
        trace.append((world.partition, world.sts_replicas))
        world.mark_ready(*world.groups)
        _reconcile(world, lws)
    assert trace == want_trace
    assert world.row() == "✅ ✅ ✅ ✅"


def test_availability_is_never_violated_during_rollout() -> None:
    """With maxSurge 1 and maxUnavailable 0, at least R groups are ready at every step, even when
    readiness arrives one group per reconcile."""
    lws = cached_lws().replicas(4).max_unavailable(0).max_surge(1).obj()
    world = _steady_world(1, 4)
    _start_update(world, lws)
    for _ in range(20):
        ready = sum(g.ready for g in world.groups.values())
        assert ready >= 4
        pending = [o for o, g in sorted(world.groups.items()) if not g.ready]
        if pending:
            world.mark_ready(pending[-1])
        _reconcile(world, lws)
    assert world.row() == "✅ ✅ ✅ ✅"
    assert (world.partition, world.sts_replicas) == (0, 4)


def test_after_apply_events_relate_to_the_revision() -> None:
    (event,) = after_apply_events(
        lws_name="lws", previous=None, partition=0, revision_created=True, revision_name="lws-7f8c9-1"
    )
    assert event.related == ("ControllerRevision", "lws-7f8c9-1")


@pytest.mark.parametrize(
    ("new_replicas", "max_unavailable", "max_surge", "want_first", "want_second"),
    [
        pytest.param(6, 1, 0, (4, 6), (4, 6), id="added groups cover maxUnavailable: old groups wait"),
        pytest.param(
            5, 2, 0, (4, 5), (3, 5), id="added groups below maxUnavailable: partition drops to new minus it"
        ),
        pytest.param(6, 1, 1, (4, 6), (4, 7), id="surge only once the scale-up is applied"),
    ],
)
def test_combined_template_update_and_scale_up(
    new_replicas: int,
    max_unavailable: int,
    max_surge: int,
    want_first: tuple[int, int],
    want_second: tuple[int, int],
) -> None:
    """The v1.0 rollout doc, "Combined update and scale-up in Ordinal mode": the first reconcile
    holds the partition at the old size and creates the new ordinals on the new revision; maxSurge
    comes on the next one; old groups roll only within maxUnavailable left by the new ones."""
    world = _steady_world(1, 4)
    lws = cached_lws().replicas(new_replicas).max_unavailable(max_unavailable).max_surge(max_surge).obj()
    _start_update(world, lws)
    assert (world.partition, world.sts_replicas) == want_first
    assert all(world.groups[o].revision == "B" for o in range(4, new_replicas))
    _reconcile(world, lws)
    assert (world.partition, world.sts_replicas) == want_second


# --- the dry run behind `lws plan` ---------------------------------------------------------------

RDY, UPD, OLD = "ready", "updating", "outdated"


@pytest.mark.parametrize(
    ("budget", "current", "want"),
    [
        pytest.param(
            RolloutBudget(4, 2, 2, 0),
            None,
            [
                (4, 6, (OLD, OLD, OLD, OLD, UPD, UPD), ()),
                (0, 6, (UPD, UPD, UPD, UPD, RDY, RDY), ()),
                (0, 4, (RDY,) * 4, ("deleting surge replicas from lws-4 to lws-5",)),
            ],
            id="doc table budget, fastest readiness",
        ),
        pytest.param(
            RolloutBudget(4, 1, 1, 0),
            None,
            [
                (4, 5, (OLD, OLD, OLD, OLD, UPD), ()),
                (2, 5, (OLD, OLD, UPD, UPD, RDY), ()),
                (0, 5, (UPD, UPD, RDY, RDY, RDY), ()),
                (0, 4, (RDY,) * 4, ("deleting surge replica lws-4",)),
            ],
            id="spec A18 trace",
        ),
        pytest.param(
            RolloutBudget(6, 0, 1, 4),
            None,
            [
                (6, 6, (OLD,) * 6, ()),
                (5, 6, (OLD,) * 5 + (UPD,), ()),
                (4, 6, (OLD,) * 4 + (UPD, RDY), ()),
                (4, 6, (OLD,) * 4 + (RDY, RDY), ()),
            ],
            id="held by the user partition",
        ),
        pytest.param(
            RolloutBudget(3, 1, 1, 2),
            None,
            [
                (3, 4, (OLD, OLD, OLD, UPD), ()),
                (2, 4, (OLD, OLD, UPD, RDY), ()),
                (2, 4, (OLD, OLD, RDY, RDY), ()),
            ],
            id="surge kept while the partition holds outdated groups",
        ),
        pytest.param(
            RolloutBudget(6, 0, 1, 0),
            4,
            [
                (4, 6, (OLD,) * 4 + (UPD, UPD), ()),
                (3, 6, (OLD,) * 3 + (UPD, RDY, RDY), ()),
                (2, 6, (OLD,) * 2 + (UPD,) + (RDY,) * 3, ()),
                (1, 6, (OLD, UPD) + (RDY,) * 4, ()),
                (0, 6, (UPD,) + (RDY,) * 5, ()),
                (0, 6, (RDY,) * 6, ()),
            ],
            id="template change with scale up from 4",
        ),
    ],
)
def test_simulate_rollout(
    budget: RolloutBudget, current: int | None, want: list[tuple[int, int, tuple[str, ...], tuple[str, ...]]]
) -> None:
    steps = simulate_rollout(budget, current_replicas=current)
    assert [(s.partition, s.replicas, s.groups, s.events) for s in steps] == want
