"""Capacity-aware surge of a DisaggregatedSet, pure: the signals read from its children and pods,
and the roles without surge that let the planner finish a rollout on full nodes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disaggregated.rollout import (
    ChildView,
    RoleTarget,
    decide_rollout,
    role_budget,
    without_surge_role,
)
from leaderworkerset.core.rollout.surgefallback import decision as sf
from leaderworkerset.core.rollout.surgefallback import disaggregated
from tests.support.builders import ds, pod

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
ROLE = RoleTarget("decode", 3, max_surge=1, max_unavailable=0, has_rolling_update_config=True)
OLD = ChildView("ds-0-old-decode", "decode", "old", 3, 3, 3, 3, "2026-12-01T10:00:00Z")
NEW = ChildView("ds-0-new-decode", "decode", "new", 1, 1, 0, 3, "2026-12-01T11:00:00Z")


def _ds(**annotations: str) -> dict:
    obj = ds()
    obj["metadata"]["annotations"] = annotations
    return obj


def _pending(child: str) -> dict:
    return (
        pod(f"{child}-0")
        .lws_name(child)
        .group_index("0")
        .condition(
            "PodScheduled", "False", reason="Unschedulable", message="no GPUs", at="2026-12-01T11:59:00Z"
        )
        .obj()
    )


@pytest.mark.parametrize(
    ("role", "want"),
    [
        pytest.param(ROLE, (0, 1), id="surge 1, unavailable 0: one at a time without surge"),
        pytest.param(replace(ROLE, max_surge=2, max_unavailable=2), (0, 2), id="unavailable 2 stays"),
        pytest.param(RoleTarget("decode", 3), (0, 1), id="no rolling update config: upstream's 1/0 default"),
    ],
)
def test_a_role_without_surge_has_no_surge_and_at_least_one_unavailable(
    role: RoleTarget, want: tuple[int, int]
) -> None:
    budget = role_budget(without_surge_role(role))
    assert (budget.max_surge, budget.max_unavailable) == want


def test_with_the_surge_the_planner_waits_without_it_drains_one_old_replica() -> None:
    assert decide_rollout("new", [ROLE], [OLD, NEW]).kind == "wait"
    decision = decide_rollout("new", [without_surge_role(ROLE)], [OLD, NEW])
    assert [(c.lws, c.replicas) for c in decision.scale_down] == [(OLD.name, 2)]
    assert decision.scale_up == ()


def test_a_rollout_without_surge_on_full_nodes_completes_one_replica_down_at_a_time() -> None:
    """Three nodes, each holding one replica: a new replica is Ready only once an old one left."""
    old, new = OLD, NEW
    lowest = 3
    for _ in range(20):
        decision = decide_rollout("new", [without_surge_role(ROLE)], [old, new])
        if decision.kind == "complete":
            break
        for change in decision.scale_down:
            old = replace(old, spec_replicas=change.replicas, status_replicas=change.replicas)
            old = replace(old, ready_replicas=min(old.ready_replicas, change.replicas))
        for change in decision.scale_up:
            new = replace(new, spec_replicas=change.replicas, status_replicas=change.replicas)
        lowest = min(lowest, old.ready_replicas + new.ready_replicas)
        new = replace(new, ready_replicas=min(new.spec_replicas, 3 - old.spec_replicas))
    assert decision.kind == "complete"
    assert (old.spec_replicas, new.ready_replicas) == (0, 3)
    assert lowest == 2


SIGNAL_CASES = [
    pytest.param({}, {}, (False, 0), id="no annotation"),
    pytest.param({ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"}, {}, (True, 0), id="opted in, nothing pending"),
    pytest.param(
        {ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"},
        {NEW.name: [_pending(NEW.name)]},
        (True, 1),
        id="a new replica unschedulable",
    ),
]


@pytest.mark.parametrize(("annotations", "pods", "want"), SIGNAL_CASES)
def test_signals_of_a_disaggregatedset(
    annotations: dict[str, str], pods: dict, want: tuple[bool, int]
) -> None:
    signals = disaggregated.ds_signals(
        _ds(**annotations), revision="new", roles=[ROLE], children=[OLD, NEW], pods_by_child=pods
    )
    assert (signals.active, len(signals.blocked)) == want
    assert not signals.quiet  # the new replica is not Ready
    assert disaggregated.ds_reads_pods(_ds(**annotations), [OLD, NEW], "new") is bool(annotations)


def test_every_signal_case_ran() -> None:
    assert len(SIGNAL_CASES) == 3


def test_an_unschedulable_role_falls_back_naming_the_role() -> None:
    signals = disaggregated.ds_signals(
        _ds(**{ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"}),
        revision="new",
        roles=[ROLE],
        children=[OLD, NEW],
        pods_by_child={NEW.name: [_pending(NEW.name)]},
    )
    mode = sf.decide_surge(signals, NOW)
    assert (mode.fallback, mode.transition) == (True, sf.Transition.FALLBACK)
    assert mode.message.startswith("role decode surge group 0 unschedulable for 60s: no GPUs")
