"""Headless Services for group DNS."""

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.services import replica_service, shared_service
from tests.support.builders import LWS_UID, ServiceBuilder, cached_lws, leader_pod


def _service(name: str, selector: dict[str, str], owner: dict[str, Any]) -> dict[str, Any]:
    service = ServiceBuilder(name).label(c.LABEL_SET_NAME, "test-sample").owner(owner)
    return service.headless(selector).publish_not_ready_addresses().obj()


LWS_OWNER = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "name": "test-sample",
    "uid": LWS_UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        pytest.param(
            c.SUBDOMAIN_SHARED,
            _service("test-sample", {c.LABEL_SET_NAME: "test-sample"}, LWS_OWNER),
            id="shared: one service for the set",
        ),
        pytest.param(
            None,
            _service("test-sample", {c.LABEL_SET_NAME: "test-sample"}, LWS_OWNER),
            id="no network config means shared",
        ),
        pytest.param(c.SUBDOMAIN_UNIQUE_PER_REPLICA, None, id="unique per replica: no set-wide service"),
    ],
)
def test_shared_service(policy: str | None, want: dict[str, Any] | None) -> None:
    assert shared_service(cached_lws().subdomain_policy(policy).obj()) == want


def test_replica_service_is_owned_by_the_leader_and_selects_its_group() -> None:
    leader = leader_pod("test-sample", 3, "rev")
    leader["spec"]["subdomain"] = "test-sample-3"
    got = replica_service(cached_lws().subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA).obj(), leader)
    assert got == _service(
        "test-sample-3",
        {c.LABEL_SET_NAME: "test-sample", c.LABEL_GROUP_INDEX: "3"},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "test-sample-3",
            "uid": "uid-test-sample-3",
            "controller": True,
            "blockOwnerDeletion": True,
        },
    )


def test_replica_service_falls_back_to_the_pod_name() -> None:
    leader = leader_pod("test-sample", 1, "rev")
    del leader["spec"]["subdomain"]
    got = replica_service(cached_lws().subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA).obj(), leader)
    assert got is not None
    assert got["metadata"]["name"] == "test-sample-1"


def test_no_replica_service_when_shared() -> None:
    assert replica_service(cached_lws().obj(), leader_pod("test-sample", 0, "rev")) is None
