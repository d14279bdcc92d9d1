"""DisaggregatedSet status and conditions."""

import datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.status import plan_ds_status, role_statuses
from tests.support.builders import DisaggregatedSetBuilder
from tests.unit.core.disaggregated.helpers import NS, child

REV = "aaaaaaaa"
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
T1 = T0 + datetime.timedelta(minutes=1)


def test_role_statuses_sum_every_slice_and_only_target_counts_as_updated() -> None:
    children = [
        child("prefill", slice_index=0, status=2, ready=2, updated=2),
        child("prefill", slice_index=1, status=2, ready=1, updated=2),
        child("prefill", revision="old00000", status=1, ready=1, updated=1),
        child("decode", status=0),
    ]
    assert role_statuses(["prefill", "decode"], children, REV) == [
        {"name": "prefill", "replicas": 5, "readyReplicas": 4, "updatedReplicas": 4},
        {"name": "decode"},  # zero counts are omitted, as Go's omitempty does
    ]


def _ds(generation: int = 1, status: dict[str, Any] | None = None) -> dict[str, Any]:
    ds = DisaggregatedSetBuilder(NS).role("prefill", 2).role("decode", 1).generation(generation).obj()
    if status is not None:
        ds["status"] = status
    return ds


READY = [child("prefill", status=2, ready=2, updated=2), child("decode", status=1, ready=1, updated=1)]
TARGETS = {"prefill": 2, "decode": 1}


def cond(
    type_: str, status: str, reason: str, message: str, gen: int = 1, at: datetime.datetime = T0
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "observedGeneration": gen,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


AVAILABLE = cond(c.CONDITION_AVAILABLE, c.CONDITION_TRUE, c.REASON_ALL_ROLES_READY, c.MESSAGE_ALL_ROLES_READY)
PROGRESSING = cond(
    c.CONDITION_PROGRESSING, c.CONDITION_TRUE, c.REASON_ROLLOUT_IN_PROGRESS, c.MESSAGE_ROLLOUT_IN_PROGRESS
)


@pytest.mark.parametrize(
    ("children", "targets", "unresolved", "want_conditions"),
    [
        pytest.param(READY, TARGETS, [], [AVAILABLE], id="all roles ready: Available"),
        pytest.param(READY[:1], TARGETS, [], [PROGRESSING], id="a role missing: Progressing"),
        pytest.param(
            READY,
            {"prefill": 2},
            ["decode"],
            [
                cond(
                    c.CONDITION_PROGRESSING,
                    c.CONDITION_TRUE,
                    c.REASON_REPLICA_TARGETS_UNRESOLVED,
                    c.MESSAGE_REPLICA_TARGETS_UNRESOLVED_PREFIX + "decode",
                )
            ],
            id="unresolved scaler",
        ),
    ],
)
def test_first_status(
    children: list[dict[str, Any]], targets: dict[str, int], unresolved: list[str], want_conditions: list[Any]
) -> None:
    plan = plan_ds_status(_ds(), children, REV, targets, unresolved, 1, T0)
    assert plan.changed
    assert plan.status["conditions"] == want_conditions
    assert plan.status["observedGeneration"] == 1


def test_flip_writes_the_partner_false_with_the_same_reason_and_message() -> None:
    first = plan_ds_status(_ds(), READY[:1], REV, TARGETS, [], 1, T0)
    second = plan_ds_status(_ds(status=first.status), READY, REV, TARGETS, [], 1, T1)
    assert second.status["conditions"] == [
        cond(
            c.CONDITION_PROGRESSING,
            c.CONDITION_FALSE,
            c.REASON_ALL_ROLES_READY,
            c.MESSAGE_ALL_ROLES_READY,
            at=T1,
        ),
        {**AVAILABLE, "lastTransitionTime": "2026-01-01T00:01:00Z"},
    ]


def test_unchanged_status_is_not_rewritten_and_generation_bump_keeps_transition_time() -> None:
    first = plan_ds_status(_ds(), READY, REV, TARGETS, [], 1, T0)
    again = plan_ds_status(_ds(status=first.status), READY, REV, TARGETS, [], 1, T1)
    assert not again.changed
    bumped = plan_ds_status(_ds(generation=2, status=first.status), READY, REV, TARGETS, [], 1, T1)
    assert bumped.changed
    assert bumped.status["conditions"] == [{**AVAILABLE, "observedGeneration": 2}]


def test_slices_multiply_the_desired_count() -> None:
    plan = plan_ds_status(_ds(), READY, REV, TARGETS, [], 2, T0)
    assert not plan.available
