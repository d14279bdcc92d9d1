"""Drain-aware replacement (Hash sets with surge): which groups are surged, when their budget goes,
when the surge is available at all, and how the leader Deployment and admission count it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget.decision import (
    GroupDisruptionView,
    budget_notes,
    decide_releases,
    group_pdb,
    observe_groups,
)
from leaderworkerset.core.disruptionbudget.drainsurge import (
    NO_SURGE,
    NOT_HASH,
    ROLLOUT_USES_SURGE,
    drain_surged,
    mark_patch,
    surge_allowance,
)
from leaderworkerset.core.hashidentity import AdmissionStep, decide_admission, leader_deployment
from leaderworkerset.core.rollout.revision import hash_patch, revision_patch
from tests.support.builders import cached_lws, leader_pod


def g(
    group: str, *, ready: bool = True, cordoned: bool = False, released: bool = False, surged: bool = False
) -> GroupDisruptionView:
    return GroupDisruptionView(group, ready, cordoned, released, leader=f"web-{group}", surged=surged)


@dataclass(frozen=True)
class Case:
    groups: tuple[GroupDisruptionView, ...]
    surge: int
    want_surged: tuple[str, ...] = ()
    want_released: tuple[str, ...] = ()
    want_waiting: tuple[str, ...] = ()
    want_unsurged: tuple[str, ...] = ()
    budget: int = 1
    replicas: int = 6


SIX = tuple(g(str(i)) for i in range(6))
NEW = g("7", ready=False)  # the surged replacement, coming up
NEW_READY = g("7")

SURGE_CASES = [
    pytest.param(
        Case((g("0", cordoned=True), *SIX[1:]), 1, want_surged=("0",)),
        id="a Ready group on a cordoned node is surged, not released",
    ),
    pytest.param(
        Case((g("0", cordoned=True), g("1", cordoned=True), *SIX[2:]), 1, ("0",), want_waiting=("1",)),
        id="one surge slot: the lowest group is surged, the next waits (never released without surge)",
    ),
    pytest.param(
        Case((g("0", cordoned=True), g("1", cordoned=True), *SIX[2:]), 2, ("0", "1")),
        id="two surge slots: two groups are surged at once",
    ),
    pytest.param(
        Case((g("0", cordoned=True, surged=True), *SIX[1:], NEW), 1, want_waiting=("0",)),
        id="the replacement is not Ready yet: the surged group keeps its budget",
    ),
    pytest.param(
        Case((g("0", cordoned=True, surged=True), *SIX[1:], NEW_READY), 1, want_released=("0",)),
        id="the replacement is Ready: the surged group is released",
    ),
    pytest.param(
        Case(
            (g("0", cordoned=True, surged=True), g("1", ready=False), *SIX[2:], NEW_READY),
            1,
            want_waiting=("0",),
        ),
        id="another group is down: the surged group waits until the set has replicas Ready without it",
    ),
    pytest.param(
        Case(
            (
                g("0", cordoned=True, surged=True),
                g("1", cordoned=True, surged=True),
                *SIX[2:],
                NEW_READY,
                g("8"),
            ),
            2,
            want_released=("0",),
            want_waiting=("1",),
        ),
        id="two replaced groups under a budget of one: released one after the other",
    ),
    pytest.param(
        Case(
            (g("0", cordoned=True, released=True, surged=True), *SIX[1:], NEW_READY, g("1b", cordoned=True)),
            1,
            want_released=(),
            want_waiting=("1b",),
        ),
        id="the surge slot is held until the released group is gone",
    ),
    pytest.param(
        Case((g("0", cordoned=True, ready=False), *SIX[1:]), 1, want_released=("0",)),
        id="a failing group on a cordoned node is released at once, no surge spent",
    ),
    pytest.param(
        Case((g("0", surged=True), *SIX[1:], NEW), 1, want_unsurged=("0",)),
        id="the node was uncordoned before the replacement was up: the mark goes",
    ),
    pytest.param(
        Case((g("0", cordoned=True), *SIX[1:]), 0, want_released=("0",)),
        id="no surge: released under the budget, as an Ordinal set",
    ),
]


@pytest.mark.parametrize("case", SURGE_CASES)
def test_decide_with_surge(case: Case) -> None:
    decision = decide_releases(case.groups, budget=case.budget, replicas=case.replicas, surge=case.surge)
    assert decision.newly_surged == case.want_surged
    assert decision.newly_released == case.want_released
    assert decision.waiting == case.want_waiting
    assert decision.unsurged == case.want_unsurged
    ready_released = [v for v in case.groups if v.group in decision.newly_released and v.ready]
    assert len(ready_released) <= case.budget, "a Ready group was released past the budget"


def test_every_surge_case_ran() -> None:
    assert len(SURGE_CASES) == 11


def _hash(max_surge: int | str = 1, *, budget: str | None = "1") -> dict[str, object]:
    builder = cached_lws("web").group_identity(c.GROUP_IDENTITY_HASH).replicas(4).max_surge(max_surge)
    if budget is not None:
        builder = builder.annotation(ext.ANNOTATION_DISRUPTION_BUDGET, budget)
    return builder.obj()


CURRENT = hash_patch(revision_patch(_hash()))  # the template's revision (maxSurge is not in it)


def _leaders(count: int, *, marked: int = 0, stale: int = 0) -> list[dict[str, object]]:
    """Leaders of the current template; the first `marked` carry the drain-surge mark, the first
    `stale` are of an older template."""
    return [
        leader_pod(
            "web",
            i,
            "old" if i < stale else CURRENT,
            annotations={ext.ANNOTATION_DRAIN_SURGE: "true"} if i < marked else None,
        )
        for i in range(count)
    ]


def _deployment(revision: str) -> dict[str, object]:
    return {"metadata": {"name": "web", "labels": {c.LABEL_TEMPLATE_REVISION_HASH: revision}}}


ALLOWANCE_CASES = [
    pytest.param(_hash(1), _leaders(4), None, (1, ""), id="Hash, maxSurge 1"),
    pytest.param(_hash("50%"), _leaders(4), None, (2, ""), id="a percentage of replicas, rounded up"),
    pytest.param(_hash(0), _leaders(4), None, (0, NO_SURGE), id="maxSurge 0: no surge"),
    pytest.param(
        _hash(1), _leaders(4, stale=1), None, (0, ROLLOUT_USES_SURGE), id="a leader of an older template"
    ),
    pytest.param(
        _hash(1), _leaders(4), _deployment("next"), (0, ROLLOUT_USES_SURGE), id="the Deployment rolls on"
    ),
    pytest.param(
        _hash(1), _leaders(4), _deployment(CURRENT), (1, ""), id="the leaders are the Deployment's revision"
    ),
    pytest.param(cached_lws("web").max_surge(1).obj(), _leaders(4), None, (0, NOT_HASH), id="Ordinal"),
]


@pytest.mark.parametrize(("lws", "pods", "deployment", "want"), ALLOWANCE_CASES)
def test_surge_allowance(
    lws: dict[str, object],
    pods: list[dict[str, object]],
    deployment: dict[str, object] | None,
    want: tuple[int, str],
) -> None:
    assert surge_allowance(lws, pods, deployment) == want


def test_every_allowance_case_ran() -> None:
    assert len(ALLOWANCE_CASES) == 7


def test_the_deployment_and_admission_count_the_marked_leaders() -> None:
    lws = _hash(1)
    assert drain_surged(lws, _leaders(4)) == 0
    assert drain_surged(lws, _leaders(4, marked=1)) == 1
    assert drain_surged(lws, _leaders(4, marked=2)) == 1, "never more than maxSurge"
    assert drain_surged(_hash(1, budget=None), _leaders(4, marked=1)) == 0, "a mark without the budget"
    assert leader_deployment(lws, revision_key=CURRENT, drain_surge=1)["spec"]["replicas"] == 5
    gated = leader_pod("web", 9, CURRENT)
    gated["spec"]["schedulingGates"] = [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}]
    unmarked = decide_admission(lws, gated, [*_leaders(4), gated], CURRENT)
    marked = decide_admission(lws, gated, [*_leaders(4, marked=1), gated], CURRENT)
    assert (unmarked.step, marked.step) == (AdmissionStep.DEFER, AdmissionStep.ADMIT)


def test_observe_and_status_of_a_surged_group() -> None:
    lws = _hash(1)
    pods = _leaders(4, marked=1)
    pods[0]["spec"]["nodeName"] = "cordoned"
    budgets = {str(p["metadata"]["labels"][c.LABEL_GROUP_KEY]): p for p in pods}
    views = observe_groups(lws, pods, frozenset({"cordoned"}), {})
    assert [v.surged for v in views] == [True, False, False, False]
    assert mark_patch(False) == {"metadata": {"annotations": {ext.ANNOTATION_DRAIN_SURGE: None}}}
    notes = budget_notes(
        lws, pods, frozenset({"cordoned"}), [group_pdb(lws, k, released=False) for k in budgets]
    )
    assert notes[1:] == [
        f"replaced first for a drain (surge): group {views[0].group[:8]}",
        "drain replacement: surge first, 1 group at a time (maxSurge)",
    ]
    no_surge = budget_notes(_hash(0), pods, frozenset(), [])
    assert no_surge[-1] == f"drain replacement: none ({NO_SURGE}), groups are released under the budget"
