"""Role scalers (spec §1.3, §3.I I8, §3.K)."""

import datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated import scalers as sc
from tests.support.builders import DisaggregatedSetBuilder
from tests.unit.core.disaggregated.helpers import DS_UID, NS, child

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def ds() -> dict[str, Any]:
    return (
        DisaggregatedSetBuilder(NS).uid(DS_UID).role("prefill", 2).role("decode", 1).external("decode").obj()
    )


def scaler(role: str, owner_uid: str = DS_UID) -> dict[str, Any]:
    built = sc.build_scaler(ds(), role, 1)
    built["metadata"]["ownerReferences"][0]["uid"] = owner_uid
    return built


@pytest.mark.parametrize(
    ("children", "want"),
    [
        pytest.param([], 1, id="fresh role seeds 1 so HPA can start"),
        pytest.param(
            [child("decode", spec=3), child("decode", revision="b", spec=None)], 4, id="sum over revisions"
        ),
        pytest.param([child("decode", spec=0)], 0, id="existing zero stays zero"),
    ],
)
def test_seed(children: list[dict[str, Any]], want: int) -> None:
    assert sc.plan_scalers(ds(), [], children).create == (("decode", want),)


def test_plan_keeps_bound_deletes_static_and_ignores_foreign() -> None:
    bound, stale, foreign = scaler("decode"), scaler("prefill"), scaler("decode", owner_uid="x")
    plan = sc.plan_scalers(ds(), [foreign, bound, stale], [])
    assert plan.bound == {"decode": bound}
    assert plan.delete == (stale,)
    assert plan.create == ()


def test_build_scaler() -> None:
    got = sc.build_scaler(ds(), "decode", 3)
    assert got["metadata"]["name"] == "test-ds-decode"
    assert got["metadata"]["labels"] == {c.LABEL_DS_NAME: "test-ds", c.LABEL_DS_ROLE: "decode"}
    assert got["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    assert got["spec"] == {"replicas": 3}


def test_scaler_status_then_idempotent() -> None:
    s = {**scaler("decode"), "metadata": {**scaler("decode")["metadata"], "generation": 2}}
    status = sc.scaler_status("test-ds", "decode", s, 5, T0)
    assert status is not None
    assert status["replicas"] == 5
    assert status["observedGeneration"] == 2
    assert status["selector"].endswith(f"{c.LABEL_WORKER_INDEX}=0")
    assert [(x["type"], x["status"], x["reason"]) for x in status["conditions"]] == [
        (c.CONDITION_READY, c.CONDITION_TRUE, c.REASON_BOUND)
    ]
    later = T0 + datetime.timedelta(hours=1)
    assert sc.scaler_status("test-ds", "decode", {**s, "status": status}, 5, later) is None
    moved = sc.scaler_status("test-ds", "decode", {**s, "status": status}, 6, later)
    assert moved is not None
    assert moved["conditions"] == status["conditions"]


def test_observed_counts_status_replicas_of_the_role() -> None:
    children = [
        child("decode", status=2),
        child("decode", revision="b", status=1),
        child("prefill", status=9),
    ]
    assert sc.observed_replicas("decode", children) == 3
