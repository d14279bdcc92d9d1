"""KubeClient request shapes (paths, content types, params, bodies) and the QPS throttle, on the wire:
the client talks HTTP to a small local server that records what it received."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from leaderworkerset.runtime.client import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    PROPAGATION_FOREGROUND,
)
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatusError, is_conflict, is_not_found
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS, STATEFULSETS
from tests.unit.runtime.wire import Recorded, make_client

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
    recorded: Recorded,
    call: Any,
    want_method: str,
    want_path: str,
    want_type: str | None,
    want_params: dict[str, str],
) -> None:
    client = make_client(recorded)
    await call(client)
    await client.close()
    request = recorded.last
    assert request.method == want_method
    assert request.path == want_path
    assert request.content_type == want_type
    assert request.params == want_params


async def test_delete_sends_propagation_and_preconditions(recorded: Recorded) -> None:
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
    await client.close()


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
    recorded: Recorded, status: int, body: dict[str, Any], want_not_found: bool, want_conflict: bool
) -> None:
    recorded.status, recorded.body = status, body
    client = make_client(recorded)
    with pytest.raises(ApiStatusError) as info:
        await client.get(PODS, "ns", "p")
    await client.close()
    assert is_not_found(info.value) == want_not_found
    assert is_conflict(info.value) == want_conflict


async def test_qps_throttle_delays_requests_beyond_burst(recorded: Recorded) -> None:
    clock = FakeClock()
    client = make_client(recorded, qps=1.0, burst=2, clock=clock)
    calls = [asyncio.create_task(client.get(PODS, "ns", f"p{i}")) for i in range(3)]
    await asyncio.wait_for(asyncio.gather(*calls[:2]), 10)
    assert len(recorded.requests) == 2, "the burst goes through at once; the third waits for the clock"
    assert not calls[2].done()
    clock.advance(1.0)
    await asyncio.wait_for(calls[2], 10)
    assert len(recorded.requests) == 3
    await client.close()


async def test_requests_are_counted_by_code_method_and_host(recorded: Recorded) -> None:
    requests_total = Counter("test_rest_client_requests", "requests", ["code", "method", "host"],
                             registry=CollectorRegistry())  # fmt: skip
    client = make_client(recorded)
    client.instrument(requests_total)
    await client.get(PODS, "ns", "p")
    await client.get(PODS, "ns", "p")
    await client.close()
    host = recorded.url.removeprefix("http://")
    assert requests_total.labels("200", "GET", host)._value.get() == 2
