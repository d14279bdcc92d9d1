"""KubeClient request shapes (paths, content types, params, bodies) and the QPS throttle."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
from lightkube import AsyncClient, KubeConfig

from leaderworkerset.runtime.client import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    PROPAGATION_FOREGROUND,
    ClientOptions,
    KubeClient,
)
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatusError, is_conflict, is_not_found
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS, STATEFULSETS
from tests.unit.runtime.fakes import settle


class Recorded:
    def __init__(self, status: int = 200, body: dict[str, Any] | None = None) -> None:
        self.requests: list[httpx2.Request] = []
        self.status = status
        self.body = body if body is not None else {"kind": "Thing"}

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self.status, json=self.body)

    @property
    def last(self) -> httpx2.Request:
        return self.requests[-1]

    def last_json(self) -> Any:
        return json.loads(self.last.content)


KUBECONFIG = {
    "clusters": [{"name": "test", "cluster": {"server": "http://apiserver.test"}}],
    "users": [{"name": "test", "user": {"token": "t"}}],
    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
    "current-context": "test",
}


def make_client(
    recorded: Recorded, qps: float = 1000.0, burst: int = 1000, clock: FakeClock | None = None
) -> KubeClient:
    lightkube = AsyncClient(
        config=KubeConfig.from_dict(KUBECONFIG),
        transport=httpx2.MockTransport(recorded.handler),
        field_manager="lws",
    )
    return KubeClient(lightkube, ClientOptions(qps=qps, burst=burst), clock or FakeClock())


LWS_STATUS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/demo/status"
LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "demo", "namespace": "ns"},
    "status": {"replicas": 1},
}


@pytest.mark.parametrize(
    ("call", "want_method", "want_path", "want_type", "want_params"),
    [
        pytest.param(
            lambda c: c.apply(STATEFULSETS, {"metadata": {"name": "s", "namespace": "ns"}}),
            "PATCH", "/apis/apps/v1/namespaces/ns/statefulsets/s", APPLY_PATCH,
            {"fieldManager": "lws", "force": "true"}, id="server-side apply is forced",
        ),
        pytest.param(
            lambda c: c.apply_status(LEADERWORKERSETS, LWS),
            "PATCH", LWS_STATUS, APPLY_PATCH,
            {"fieldManager": "lws", "force": "true"}, id="status apply on the subresource",
        ),
        pytest.param(
            lambda c: c.merge_patch(PODS, "ns", "p", {"metadata": {"labels": {"a": "b"}}}),
            "PATCH", "/api/v1/namespaces/ns/pods/p", MERGE_PATCH, {"fieldManager": "lws"}, id="merge patch",
        ),
        pytest.param(
            lambda c: c.json_patch(PODS, "ns", "p", [{"op": "remove", "path": "/metadata/labels/a"}]),
            "PATCH", "/api/v1/namespaces/ns/pods/p", JSON_PATCH, {"fieldManager": "lws"}, id="json patch",
        ),
        pytest.param(
            lambda c: c.patch_status(LEADERWORKERSETS, "ns", "demo", {"status": {"replicas": 2}}),
            "PATCH", LWS_STATUS, MERGE_PATCH,
            {"fieldManager": "lws"}, id="status merge patch",
        ),
        pytest.param(
            lambda c: c.create(PODS, {"metadata": {"name": "p", "namespace": "ns"}}),
            "POST", "/api/v1/namespaces/ns/pods", "application/json", {"fieldManager": "lws"}, id="create",
        ),
        pytest.param(
            lambda c: c.update(LEADERWORKERSETS, LWS, subresource="status"),
            "PUT", LWS_STATUS,
            "application/json", {"fieldManager": "lws"}, id="update status",
        ),
        pytest.param(
            lambda c: c.get(NODES, None, "n1"), "GET", "/api/v1/nodes/n1", None, {}, id="cluster-scoped get",
        ),
    ],
)  # fmt: skip
async def test_request_shapes(
    call: Any, want_method: str, want_path: str, want_type: str | None, want_params: dict[str, str]
) -> None:
    recorded = Recorded()
    client = make_client(recorded)
    await call(client)
    request = recorded.last
    assert request.method == want_method
    assert request.url.path == want_path
    assert request.headers.get("content-type") == want_type
    assert dict(request.url.params) == want_params


async def test_delete_sends_propagation_and_preconditions() -> None:
    recorded = Recorded()
    client = make_client(recorded)
    await client.delete(
        STATEFULSETS, "ns", "s", propagation=PROPAGATION_FOREGROUND, uid="u-1", resource_version="7",
        grace_period_seconds=0,
    )  # fmt: skip
    assert recorded.last.method == "DELETE"
    assert recorded.last_json() == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u-1", "resourceVersion": "7"},
        "gracePeriodSeconds": 0,
    }


@pytest.mark.parametrize(
    ("status", "body", "want_not_found", "want_conflict"),
    [
        pytest.param(404, {"kind": "Status", "code": 404, "reason": "NotFound"}, True, False, id="not found"),
        pytest.param(409, {"kind": "Status", "code": 409, "reason": "Conflict"}, False, True, id="conflict"),
        pytest.param(
            409, {"kind": "Status", "code": 409, "reason": "AlreadyExists"}, False, False, id="exists"
        ),
    ],
)
async def test_errors_carry_status(
    status: int, body: dict[str, Any], want_not_found: bool, want_conflict: bool
) -> None:
    client = make_client(Recorded(status, body))
    with pytest.raises(ApiStatusError) as info:
        await client.get(PODS, "ns", "p")
    assert is_not_found(info.value) == want_not_found
    assert is_conflict(info.value) == want_conflict


async def test_qps_throttle_delays_requests_beyond_burst() -> None:
    recorded = Recorded()
    clock = FakeClock()
    client = make_client(recorded, qps=1.0, burst=2, clock=clock)
    calls = [asyncio.create_task(client.get(PODS, "ns", f"p{i}")) for i in range(3)]
    await settle()
    assert len(recorded.requests) == 2, "the burst goes through at once"
    clock.advance(1.0)
    await asyncio.wait_for(asyncio.gather(*calls), 1)
    assert len(recorded.requests) == 3
