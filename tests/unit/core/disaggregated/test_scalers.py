"""Role scalers."""

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


def owned_by(role: str, **owner: Any) -> dict[str, Any]:
    built = scaler(role)
    built["metadata"]["ownerReferences"][0].update(owner)
    return built


def test_plan_keeps_bound_deletes_static_and_ignores_foreign() -> None:
    bound, stale, foreign = scaler("decode"), scaler("prefill"), owned_by("decode", name="other", uid="x")
    plan = sc.plan_scalers(ds(), [foreign, bound, stale], [])
    assert plan.bound == {"decode": bound}
    assert plan.delete == (stale,)
    assert plan.create == ()
    assert plan.adopt == ()


@pytest.mark.parametrize(
    "foreign",
    [
        pytest.param(owned_by("decode", name="other", uid="x"), id="another DS"),
        pytest.param(owned_by("decode", kind="Deployment", uid="x"), id="another kind of the same name"),
        pytest.param(owned_by("decode", apiVersion="example.com/v1", uid="x"), id="another group"),
        pytest.param(owned_by("decode", controller=False, uid="x"), id="no controller"),
    ],
)
def test_a_scaler_of_someone_else_is_neither_adopted_nor_bound(foreign: dict[str, Any]) -> None:
    plan = sc.plan_scalers(ds(), [foreign], [])
    assert (plan.bound, plan.adopt, plan.delete) == ({}, (), ())
    assert plan.create == (("decode", 1),)  # the create meets AlreadyExists: ScalerConflict


def test_a_scaler_left_by_a_deleted_set_of_the_same_name_is_adopted_not_recreated() -> None:
    # Upstream's e2e hpa_test.go: the set is deleted and created again under its name; until the
    # garbage collector removes the old scaler, `kubectl scale dsrs/<ds>-<role>` writes that one.
    leftover = scaler("decode", owner_uid="uid-of-the-deleted-set")
    leftover["spec"] = {"replicas": 3}
    plan = sc.plan_scalers(ds(), [leftover], [])
    assert plan.adopt == (("decode", leftover),)
    assert (plan.bound, plan.create, plan.delete) == ({}, (), ())


def test_a_leftover_of_a_role_that_is_not_external_is_left_to_the_garbage_collector() -> None:
    leftover = scaler("prefill", owner_uid="uid-of-the-deleted-set")
    plan = sc.plan_scalers(ds(), [leftover], [])
    assert (plan.adopt, plan.delete) == ((), ())


def test_adoption_patch_replaces_the_dead_controller_and_keeps_the_rest() -> None:
    leftover = scaler("decode", owner_uid="uid-of-the-deleted-set")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "cm"}
    leftover["metadata"]["ownerReferences"].append(other)
    leftover["metadata"]["resourceVersion"] = "42"
    patch = sc.adoption_patch(ds(), "decode", leftover)
    assert patch == {
        "metadata": {
            "resourceVersion": "42",
            "labels": {c.LABEL_DS_NAME: "test-ds", c.LABEL_DS_ROLE: "decode"},
            "ownerReferences": [other, sc.build_scaler(ds(), "decode", 1)["metadata"]["ownerReferences"][0]],
        }
    }
    assert "spec" not in patch  # the replicas an autoscaler wrote are kept


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
