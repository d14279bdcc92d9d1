"""The named steps of an LWS's `lws plan` (core/plan/leaderworkerset.py), each on its own: where the
live groups stand, whether a rollout is left, a scale without one, where the simulation starts, and
the rollout's summary, steps and warnings. tests/unit/core/test_plan.py covers whole plans."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import MISSING_GROUP, GroupState
from leaderworkerset.core.plan import leaderworkerset as lwsplan
from leaderworkerset.core.plan.steps import empty_plan
from leaderworkerset.core.rollout.partition import LeaderStatefulSetView, RolloutBudget, RolloutStep
from leaderworkerset.core.scheduling.surgefallback import SurgePath
from tests.support.builders import cached_lws, leader_pod, leader_sts

Obj = dict[str, Any]
READY_NEW = GroupState(ready=True, updated=True)
READY_OLD = GroupState(ready=True, updated=False)
GPU = {"nvidia.com/gpu": 2}


def _budget(replicas: int = 4, *, surge: int = 1, unavailable: int = 0, partition: int = 0) -> RolloutBudget:
    return RolloutBudget(replicas, surge, unavailable, partition)


def _base(live: Obj | None = None) -> Any:
    return empty_plan(c.LWS_KIND, live or cached_lws().obj(), None, None)


def test_a_hash_set_gets_no_step_plan() -> None:
    plan = lwsplan.hash_identity_plan(_base())
    assert (plan.change, plan.steps, plan.warnings) == (
        "no rollout",
        (),
        ("no step plan for groupIdentity Hash",),
    )


def test_the_live_groups_come_from_the_statefulset_and_the_leaders_when_given() -> None:
    live = cached_lws().replicas(3).obj()
    assert lwsplan.live_groups(live, None, leader_pods=None, statefulsets=(), revision_key="k") == (
        lwsplan.LiveGroups(3)
    )
    sts = leader_sts("test-sample", replicas=2)
    assert lwsplan.live_groups(live, sts, leader_pods=None, statefulsets=(), revision_key="k") == (
        lwsplan.LiveGroups(2)
    )
    leaders = [leader_pod("test-sample", i, "k") for i in range(2)]
    read = lwsplan.live_groups(live, sts, leader_pods=leaders, statefulsets=(), revision_key="k")
    assert read.count == 2
    assert read.statefulset == LeaderStatefulSetView.of(sts)
    assert read.observed is not None
    assert len(read.observed) == 2


def test_without_the_groups_read_no_rollout_is_left() -> None:
    assert lwsplan.unfinished_rollout(lwsplan.LiveGroups(4), _budget()) is False


def _view(replicas: int) -> LeaderStatefulSetView:
    return LeaderStatefulSetView(replicas=replicas, partition=0, replicas_annotation=None)


@pytest.mark.parametrize(
    ("observed", "sts_replicas", "unfinished"),
    [
        pytest.param([READY_NEW] * 4, 4, False, id="every group updated"),
        pytest.param([READY_NEW] * 4, 5, True, id="the surge is still up"),
        pytest.param([READY_NEW, READY_OLD, READY_NEW, READY_NEW], 4, True, id="a group left behind"),
        pytest.param([READY_NEW, MISSING_GROUP, READY_NEW, READY_NEW], 4, False, id="a missing group"),
    ],
)
def test_a_rollout_is_left_while_the_surge_is_up_or_a_group_is_outdated(
    observed: list[GroupState], sts_replicas: int, unfinished: bool
) -> None:
    groups = lwsplan.LiveGroups(sts_replicas, observed, _view(sts_replicas))
    assert lwsplan.unfinished_rollout(groups, _budget()) is unfinished


@pytest.mark.parametrize(
    ("new_replicas", "change", "down", "up"),
    [
        pytest.param(4, "no change", None, None, id="same spec"),
        pytest.param(6, "scale only", (), ("4", "5"), id="grow"),
        pytest.param(2, "scale only", ("2", "3"), (), id="shrink"),
    ],
)
def test_without_a_rollout_the_groups_are_only_scaled(
    new_replicas: int, change: str, down: tuple[str, ...] | None, up: tuple[str, ...] | None
) -> None:
    live = cached_lws().replicas(4).obj()
    proposed = cached_lws().replicas(new_replicas).obj()
    plan = lwsplan.scale_plan(_base(live), live, proposed, _budget(new_replicas), 4, GPU)
    assert plan.change == change
    if down is None:
        assert plan.steps == ()
        return
    (step,) = plan.steps
    assert (step.down, step.up, step.waits_for_ready) == (down, up, new_replicas > 4)
    assert dict(step.extra_accelerators) == (
        {"nvidia.com/gpu": 4} if new_replicas > 4 else {"nvidia.com/gpu": -4}
    )


def test_a_spec_change_without_a_new_template_is_no_rollout() -> None:
    live = cached_lws().replicas(4).obj()
    proposed = cached_lws().replicas(4).obj()
    proposed["spec"]["startupPolicy"] = c.STARTUP_POLICY_LEADER_READY
    plan = lwsplan.scale_plan(_base(live), live, proposed, _budget(4), 4, GPU)
    assert (plan.change, plan.summary) == ("no rollout", "the change does not alter the group template")


def test_without_surge_the_simulation_starts_with_the_surge_given_back() -> None:
    groups = lwsplan.LiveGroups(5, [READY_OLD] * 5, _view(5))
    budget, start = lwsplan.rollout_start(groups, _budget(4), without_surge=True)
    assert budget.surge == 0
    assert (start.count, len(start.observed or ()), start.statefulset) == (4, 4, _view(4))
    assert lwsplan.rollout_start(groups, _budget(4), without_surge=False) == (_budget(4), groups)


def test_the_steps_are_the_simulated_rounds_that_move_a_group() -> None:
    start = lwsplan.LiveGroups(2)
    simulated = [
        RolloutStep(0, 0, events=(), groups=("outdated", "outdated", "updating")),
        RolloutStep(0, 0, events=(), groups=("outdated", "outdated", "updating")),  # only waits for readiness
        RolloutStep(0, 0, events=(), groups=("outdated", "updating", "ready")),
    ]
    steps = lwsplan.rollout_steps(simulated, start, 2, GPU, GPU, True)
    assert [(s.down, s.up) for s in steps] == [((), ("2",)), (("1",), ("1",))]
    assert dict(steps[0].extra_accelerators) == GPU  # the surge group's, over what the groups hold


@pytest.mark.parametrize(
    ("new_revision", "partition", "start", "end"),
    [
        (True, 0, "rolling update of 4 groups", "partition 0"),
        (False, 0, "a rollout is under way, no new template: its remaining steps; rolling", "partition 0"),
        (True, 2, "rolling update", "; groups below 2 stay on the old revision"),
    ],
)
def test_the_rollout_summary(new_revision: bool, partition: int, start: str, end: str) -> None:
    summary = lwsplan.rollout_summary(_budget(partition=partition), new_revision=new_revision)
    assert summary.startswith(start)
    assert summary.endswith(end)


def test_the_rollout_warnings_name_a_pause_a_surge_kept_up_and_the_surge_path() -> None:
    live = cached_lws().obj()
    paused = cached_lws().annotation(ext.ANNOTATION_ROLLOUT_PAUSED, "true").obj()
    kept = [RolloutStep(0, 0, events=(), groups=("outdated",) * 5)]
    path = SurgePath(without_surge=False, warning="the nodes lack the surge")
    warnings = lwsplan.rollout_warnings(live, paused, _budget(4), kept, path)
    assert [w.split(":")[0].split(" ")[0] for w in warnings] == ["rollout", "1", "the"]
    assert lwsplan.rollout_warnings(live, live, _budget(4), [], SurgePath(without_surge=False)) == ()
