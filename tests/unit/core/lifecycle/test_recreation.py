"""A failed group's recreation, decided on fresh reads (core/lifecycle/recreation.py): nothing, release,
terminate, exhaust or recreate, the restart budget before the back-off, and the ledger's entries."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle import ledger, recreation, restartbudget
from leaderworkerset.core.lifecycle.recreation import RecreationStep
from tests.support.builders import LeaderWorkerSetBuilder, leader_pod

Obj = dict[str, Any]
UID = "leader-uid"
WHEN = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def _leader(**annotations: str) -> Obj:
    return leader_pod("test-sample", 1, "rev", uid=UID, annotations=annotations or None)


def _lws(budget: int | None = None, counts: str | None = None, *, deleting: bool = False) -> Obj:
    builder = LeaderWorkerSetBuilder()
    if budget is not None:
        builder.max_group_restarts(budget)
    if counts is not None:
        builder.annotation(c.ANNOTATION_GROUP_RESTART_COUNTS, counts)
    obj = builder.obj()
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return obj


def _deleting(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return pod


@pytest.mark.parametrize(
    ("leader", "lws", "step"),
    [
        pytest.param(None, _lws(), RecreationStep.NOTHING, id="the leader is gone: done"),
        pytest.param(
            leader_pod("test-sample", 1, "rev", uid="other"), _lws(), RecreationStep.NOTHING, id="replaced"
        ),
        pytest.param(_leader(), None, RecreationStep.RELEASE, id="the set is gone"),
        pytest.param(_leader(), _lws(deleting=True), RecreationStep.RELEASE, id="the set is going"),
        pytest.param(_deleting(_leader()), _lws(), RecreationStep.NOTHING, id="the leader is going"),
        pytest.param(
            _leader(**{c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}),
            _lws(1),
            RecreationStep.TERMINATE,
            id="retained before",
        ),
        pytest.param(_leader(), _lws(), RecreationStep.RECREATE, id="no budget"),
        pytest.param(_leader(), _lws(2, '{"rev/1":1}'), RecreationStep.RECREATE, id="budget left"),
        pytest.param(_leader(), _lws(2, '{"rev/1":2}'), RecreationStep.EXHAUST, id="budget spent"),
    ],
)
def test_the_step_follows_the_fresh_leader_and_set(
    leader: Obj | None, lws: Obj | None, step: RecreationStep
) -> None:
    assert recreation.decide_recreation(UID, leader, lws).step is step


def test_a_recreation_charges_the_next_count_and_a_claim_is_finished_not_counted_again() -> None:
    charge = recreation.decide_recreation(UID, _leader(), _lws(3, '{"rev/1":1}')).charge
    assert charge == restartbudget.RestartBudgetDecision(
        restartbudget.RestartBudgetStep.CONSUME, "rev/1", 2, claimed=False
    )
    claimed = _leader(**{ext.ANNOTATION_GROUP_RESTART_CLAIM: "2"})
    charge = recreation.decide_recreation(UID, claimed, _lws(3, '{"rev/1":2}')).charge
    assert charge is not None
    assert (charge.count, charge.claimed) == (2, True)
    assert recreation.decide_recreation(UID, _leader(), _lws()).charge is None


def test_the_set_is_read_again_only_for_the_failed_groups_leader() -> None:
    assert recreation.same_leader(_leader(), UID)
    assert not recreation.same_leader(_leader(), "another")
    assert not recreation.same_leader(None, UID)


def test_the_ledger_entries_name_the_group_the_leader_and_the_delay() -> None:
    trigger = ledger.Trigger(ledger.Cause.EXIT_CODE, pod="test-sample-1-1", container="worker", exit_code=3)
    exhausted = recreation.group_entry(trigger, _leader(), ledger.Action.BUDGET_EXHAUSTED, WHEN)
    recreated = recreation.group_entry(trigger, _leader(), ledger.Action.RECREATED, WHEN, 4.0)
    assert (exhausted.action, exhausted.group, exhausted.leader_uid) == (
        ledger.Action.BUDGET_EXHAUSTED,
        "1",
        UID,
    )
    assert (recreated.action, recreated.delay_seconds, recreated.trigger) == (
        ledger.Action.RECREATED,
        4.0,
        trigger,
    )
    assert exhausted.time == recreated.time
    assert exhausted.delay_seconds is None
