"""Group disruption budgets: which groups a drain may take, the annotation, the budgets' shape."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget import annotation
from leaderworkerset.core.disruptionbudget.decision import (
    SETTLE_SECONDS,
    GroupBudget,
    GroupDisruptionView,
    budget_notes,
    decide_releases,
    group_pdb,
    observe_groups,
    pending_pods,
    plan_budgets,
)
from tests.support.builders import cached_lws, leader_pod, pod


def g(
    group: str,
    *,
    ready: bool = True,
    cordoned: bool = False,
    released: bool = False,
    ready_for: float | None = None,
) -> GroupDisruptionView:
    return GroupDisruptionView(group, ready, cordoned, released, ready_for=ready_for)


@dataclass(frozen=True)
class Case:
    groups: tuple[GroupDisruptionView, ...]
    budget: int
    replicas: int
    want_released: tuple[str, ...]
    want_new: tuple[str, ...] = ()
    want_locked: tuple[str, ...] = ()
    want_waiting: tuple[str, ...] = ()
    want_recheck: float | None = None


SIX = tuple(g(str(i)) for i in range(6))

DECIDE_CASES = [
    pytest.param(Case(SIX, 1, 6, ()), id="no cordoned node: every budget stays locked"),
    pytest.param(
        Case((g("0"), g("1", cordoned=True), *SIX[2:]), 1, 6, ("1",), want_new=("1",)),
        id="one group on a cordoned node is released",
    ),
    pytest.param(
        Case(
            (g("0", cordoned=True), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            ("0",),
            want_new=("0",),
            want_waiting=("2",),
        ),
        id="two drains at once: the lowest group goes, the other waits",
    ),
    pytest.param(
        Case(
            (g("0", cordoned=True), g("1"), g("2", cordoned=True), *SIX[3:]),
            2,
            6,
            ("0", "2"),
            want_new=("0", "2"),
        ),
        id="a budget of two releases two groups",
    ),
    pytest.param(
        Case(
            (g("0", released=True, ready=False), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            ("0",),
            want_waiting=("2",),
        ),
        id="the released group is not Ready yet: the next waits",
    ),
    pytest.param(
        Case(
            (g("0", released=True, cordoned=True), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            ("0",),
            want_waiting=("2",),
        ),
        id="the released group is not evicted yet: it stays released",
    ),
    pytest.param(
        Case(
            (g("0", released=True), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            ("2",),
            want_new=("2",),
            want_locked=("0",),
        ),
        id="the replacement is Ready elsewhere: locked, and the next group goes in the same round",
    ),
    pytest.param(
        Case(
            (g("0", ready=False), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            (),
            want_waiting=("2",),
        ),
        id="a failing group elsewhere spends the budget",
    ),
    pytest.param(
        Case(
            (g("0", ready=False, cordoned=True), g("1"), g("2", cordoned=True), *SIX[3:]),
            1,
            6,
            ("0",),
            want_new=("0",),
            want_waiting=("2",),
        ),
        id="a failing group on the drained node is released at no cost",
    ),
    pytest.param(
        Case(
            (g("0", ready=False, cordoned=True), g("1", ready=False, cordoned=True), *SIX[2:]),
            1,
            6,
            ("0", "1"),
            want_new=("0", "1"),
        ),
        id="several failing groups on drained nodes never block the drain",
    ),
    pytest.param(
        Case((g("1", cordoned=True), *SIX[2:]), 1, 6, (), want_waiting=("1",)),
        id="a missing group counts as down (a group being recreated, a rollout)",
    ),
    pytest.param(
        Case(
            (g("0", ready=False), g("1", ready=False), g("2", cordoned=True), *SIX[3:]),
            2,
            6,
            (),
            want_waiting=("2",),
        ),
        id="a rolling update using the whole budget holds the drain back",
    ),
    pytest.param(
        Case(
            (g("10", cordoned=True), g("9", cordoned=True), *SIX[:5]),
            1,
            7,
            ("9",),
            want_new=("9",),
            want_waiting=("10",),
        ),
        id="groups are ordered by index, not as text",
    ),
    pytest.param(
        Case(
            (g("0", released=True, ready=False), g("1", cordoned=True), *SIX[2:]),
            3,
            6,
            ("0", "1"),
            want_new=("1",),
        ),
        id="room left in the budget: the next group goes while the first is still down",
    ),
    pytest.param(
        Case(
            (g("0", released=True, ready_for=4.0), g("1", cordoned=True), *SIX[2:]),
            1,
            6,
            ("0",),
            want_waiting=("1",),
            want_recheck=SETTLE_SECONDS - 4.0,
        ),
        id="a replacement Ready for 4 s settles: a drain retrying its pod's name can still get through",
    ),
    pytest.param(
        Case(
            (g("0", released=True, ready_for=SETTLE_SECONDS), g("1", cordoned=True), *SIX[2:]),
            1,
            6,
            ("1",),
            want_new=("1",),
            want_locked=("0",),
        ),
        id="settled: locked, and the next group goes",
    ),
    pytest.param(
        Case(
            (*SIX[:2], GroupDisruptionView("2", True, False, False, pending=frozenset({"web-2"})), *SIX[3:]),
            1,
            6,
            ("2",),
            want_new=("2",),
        ),
        id="owed: a rollout replaced the pod a drain was refused on, so the drain retries the name",
    ),
    pytest.param(
        Case(
            (
                g("0", released=True, ready=False),
                GroupDisruptionView("2", True, False, False, pending=frozenset({"web-2"})),
            ),
            1,
            2,
            ("0",),
            want_waiting=("2",),
        ),
        id="an owed release waits for the budget like any other",
    ),
]


@pytest.mark.parametrize("case", DECIDE_CASES)
def test_decide(case: Case) -> None:
    decision = decide_releases(case.groups, budget=case.budget, replicas=case.replicas)
    assert decision.released == case.want_released
    assert decision.newly_released == case.want_new
    assert decision.newly_locked == case.want_locked
    assert decision.waiting == case.want_waiting
    assert decision.recheck_after == case.want_recheck
    views = {v.group: v for v in case.groups}
    if any(views[group].ready for group in decision.newly_released):
        assert decision.down <= case.budget, "a Ready group was released past the budget"


def test_every_decide_case_ran() -> None:
    assert len(DECIDE_CASES) == 18


@pytest.mark.parametrize(
    ("value", "replicas", "want_groups"),
    [
        pytest.param("1", 6, 1, id="one group"),
        pytest.param("+2", 6, 2, id="a sign, as Go's Atoi takes it"),
        pytest.param("50%", 6, 3, id="half of six"),
        pytest.param("10%", 6, 1, id="a percentage rounds up"),
        pytest.param("1%", 0, 1, id="a set scaled to zero still allows one group"),
        pytest.param("100%", 4, 4, id="every group"),
    ],
)
def test_valid_budgets(value: str, replicas: int, want_groups: int) -> None:
    lws = cached_lws().replicas(replicas).annotation(ext.ANNOTATION_DISRUPTION_BUDGET, value).obj()
    assert annotation.disruption_budget(lws)[1] is None
    assert annotation.budget_groups(lws) == want_groups


@pytest.mark.parametrize("value", ["0", "-1", "0%", "101%", "1.5", "one", "", "%", " 1", "1 %"])
def test_invalid_budgets_name_the_rule(value: str) -> None:
    lws = cached_lws().annotation(ext.ANNOTATION_DISRUPTION_BUDGET, value).obj()
    budget, error = annotation.disruption_budget(lws)
    assert budget is None
    assert error is not None
    assert error.key == ext.ANNOTATION_DISRUPTION_BUDGET
    assert error.rule == annotation.RULE
    assert annotation.budget_groups(lws) is None


def test_a_set_without_the_annotation_has_no_budget() -> None:
    assert annotation.disruption_budget(cached_lws().obj()) == (None, None)


def test_the_budget_of_a_group() -> None:
    lws = cached_lws("web").size(3).obj()
    locked, released = group_pdb(lws, "2", released=False), group_pdb(lws, "2", released=True)
    assert locked["metadata"]["name"] == "web-group-2"
    assert locked["spec"]["selector"]["matchLabels"] == {c.LABEL_SET_NAME: "web", c.LABEL_GROUP_INDEX: "2"}
    assert locked["spec"]["minAvailable"] == 3
    assert released["spec"]["minAvailable"] == 0
    assert locked["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert locked["metadata"]["ownerReferences"][0]["kind"] == c.LWS_KIND
    assert locked["metadata"]["labels"][ext.LABEL_GROUP_DISRUPTION_BUDGET] == "true"


def test_a_hash_group_is_selected_by_its_key() -> None:
    lws = cached_lws("web").group_identity(c.GROUP_IDENTITY_HASH).obj()
    selector = group_pdb(lws, "abc", released=False)["spec"]["selector"]["matchLabels"]
    assert selector == {c.LABEL_SET_NAME: "web", c.LABEL_GROUP_KEY: "abc"}


def _worker(group: int, *, ready: bool = True, node: str = "n0", deleting: bool = False) -> dict[str, object]:
    builder = (
        pod(f"web-{group}-1", namespace="default")
        .lws_name("web")
        .group_index(str(group))
        .worker_index("1")
        .node(node)
        .condition("Ready", c.CONDITION_TRUE if ready else c.CONDITION_FALSE)
    )
    return (builder.deleting() if deleting else builder).obj()


def _leader(group: int, *, ready: bool = True, node: str = "n0") -> dict[str, object]:
    leader = leader_pod("web", group, "rev", ready=ready)
    leader["spec"]["nodeName"] = node
    return leader


def test_observe_groups_from_pods_and_budgets() -> None:
    lws = cached_lws("web").replicas(4).size(2).obj()
    pods = [
        _leader(0),
        _worker(0),  # Ready
        _leader(1, node="cordoned"),
        _worker(1),  # Ready, on a cordoned node
        _leader(2),
        _worker(2, ready=False),  # not Ready
        _leader(3),
        _worker(3, node="cordoned", deleting=True),  # evicted worker: going anyway
    ]
    views = {
        v.group: v
        for v in observe_groups(
            lws,
            pods,
            frozenset({"cordoned"}),
            {"1": group_pdb(lws, "1", released=True), "5": group_pdb(lws, "5", released=False)},
        )
    }
    assert set(views) == {"0", "1", "2", "3", "5"}
    assert views["0"] == GroupDisruptionView("0", True, False, False, True, leader="web-0")
    assert views["1"] == GroupDisruptionView(
        "1", True, True, True, True, cordoned_pods=frozenset({"web-1"}), leader="web-1"
    )
    assert not views["2"].ready
    assert not views["3"].ready
    assert not views["3"].on_cordoned_node
    assert views["5"] == GroupDisruptionView("5", False, False, False, False)


def test_plan_drops_the_budgets_of_groups_that_left() -> None:
    lws = cached_lws("web").replicas(2).obj()
    plan = plan_budgets(lws, [g("0"), g("1", cordoned=True), g("2")], budget=1, replicas=2)
    assert plan.apply == {"0": GroupBudget(False), "1": GroupBudget(True)}
    assert plan.delete == ("2",)


def test_plan_of_a_hash_set_keeps_budgets_of_groups_with_pods() -> None:
    lws = cached_lws("web").group_identity(c.GROUP_IDENTITY_HASH).replicas(1).obj()
    gone = GroupDisruptionView("old", False, False, True, present=False)
    plan = plan_budgets(lws, [gone, g("new")], budget=1, replicas=1)
    assert plan.apply == {"new": GroupBudget(False)}
    assert plan.delete == ("old",)


def test_a_group_is_ready_since_its_last_pod_turned_ready() -> None:
    lws = cached_lws("web").replicas(1).size(2).obj()
    pods = [
        pod(name, namespace="default")
        .lws_name("web")
        .group_index("0")
        .worker_index(index)
        .condition("Ready", c.CONDITION_TRUE, at=at)
        .obj()
        for name, index, at in (
            ("web-0", "0", "2026-01-01T00:00:00Z"),
            ("web-0-1", "1", "2026-01-01T00:00:06Z"),
        )
    ]
    now = datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)
    released = {"0": group_pdb(lws, "0", released=True)}
    (view,) = observe_groups(lws, pods, frozenset(), released, now)
    assert view.ready_for == 4.0
    (unknown,) = observe_groups(lws, pods, frozenset(), released)
    assert unknown.ready_for is None


def test_what_lws_status_says_of_a_budget() -> None:
    lws = cached_lws("web").replicas(3).size(2).annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1").obj()
    pods = [
        _leader(0, node="cordoned"),
        _worker(0),
        _leader(1),
        _worker(1, node="cordoned"),
        _leader(2),
        _worker(2),
    ]
    budgets = [group_pdb(lws, "0", released=True), *(group_pdb(lws, g, released=False) for g in "12")]
    assert budget_notes(lws, pods, frozenset({"cordoned"}), budgets) == [
        "disruption budget: 1 group at a time, 3 group budgets",
        "released for a drain: group 0",
        "on cordoned nodes, waiting for the budget: group 1",
    ]
    assert budget_notes(cached_lws("web").obj(), pods, frozenset(), budgets) == []


def test_the_names_a_drain_was_refused_on_are_kept_until_the_group_is_locked_again() -> None:
    lws = cached_lws("web").replicas(2).obj()
    waiting = GroupDisruptionView("1", True, True, False, cordoned_pods=frozenset({"web-1"}))
    plan = plan_budgets(lws, [g("0", released=True, ready=False), waiting], budget=1, replicas=2)
    assert plan.apply["1"] == GroupBudget(False, frozenset({"web-1"}))
    moved = GroupDisruptionView("1", True, False, False, pending=frozenset({"web-1"}))  # replaced elsewhere
    plan = plan_budgets(lws, [g("0"), moved], budget=1, replicas=2)
    assert plan.apply["1"] == GroupBudget(True, frozenset({"web-1"}))
    settled = GroupDisruptionView(
        "1", True, False, True, ready_for=SETTLE_SECONDS, pending=frozenset({"web-1"})
    )
    plan = plan_budgets(lws, [g("0"), settled], budget=1, replicas=2)
    assert plan.apply["1"] == GroupBudget(False)
    assert pending_pods(group_pdb(lws, "1", released=False, pending={"b", "a"})) == frozenset({"a", "b"})
