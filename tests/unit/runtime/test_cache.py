"""Cache: informers declared once per name, synced together, server-side filters in the request."""

from __future__ import annotations

import asyncio
import json

import pytest

from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.projections import POD_CODEC
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS
from tests.support.wait import eventually
from tests.unit.runtime.builders import event, initial_events_end, list_body, obj
from tests.unit.runtime.wire import Received, Recorded, make_client


async def test_informer_names_must_be_unique(recorded: Recorded) -> None:
    cache = Cache(make_client(recorded))
    cache.informer(PODS, POD_CODEC)
    with pytest.raises(ValueError, match="already declared"):
        cache.informer(PODS, POD_CODEC)
    cache.informer(PODS, POD_CODEC, name="leader-pods", label_selector="role=leader")
    assert sorted(cache.informers) == ["leader-pods", "pods.core"]


POD_PATH = "/api/v1/namespaces/ns/pods"
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets"


def plain_watches(recorded: Recorded) -> list[Received]:
    return [
        r
        for r in recorded.requests
        if r.params.get("watch") == "true" and "sendInitialEvents" not in r.params
    ]


async def run_until_synced(recorded: Recorded) -> None:
    client = make_client(recorded)
    cache = Cache(client)
    cache.informer(PODS, POD_CODEC, namespace="ns", label_selector="a=b", field_selector="spec.nodeName=n1")
    cache.informer(LEADERWORKERSETS, DictCodec(), namespace="ns")
    assert not cache.has_synced()
    runner = asyncio.create_task(cache.run())
    await asyncio.wait_for(cache.wait_for_sync(), 5)
    assert cache.has_synced()
    # Both informers move on to a plain watch (the server ends a stream at once): wait until the server
    # has received one for each path.
    await eventually(lambda: {r.path for r in plain_watches(recorded)} >= {POD_PATH, LWS_PATH})
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    await client.close()


async def test_streaming_list_request_carries_namespace_selectors_and_initial_events(
    recorded: Recorded,
) -> None:
    recorded.initial_events = event("ADDED", obj("p", rv="4")) + b"\n" + initial_events_end("5") + b"\n"
    await run_until_synced(recorded)
    streams = [r for r in recorded.requests if "sendInitialEvents" in r.params]
    pods = next(r for r in streams if r.path == POD_PATH)
    assert pods.params == {
        "labelSelector": "a=b",
        "fieldSelector": "spec.nodeName=n1",
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "resourceVersion": "",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": pods.params["timeoutSeconds"],
    }
    assert {r.path for r in streams} == {POD_PATH, LWS_PATH}
    assert not [r for r in recorded.requests if "limit" in r.params], "no LIST when the stream syncs"


async def test_list_request_carries_namespace_and_selectors_when_streaming_is_refused(
    recorded: Recorded,
) -> None:
    recorded.body = json.loads(list_body([obj("p")], rv="5"))
    await run_until_synced(recorded)
    lists = [r for r in recorded.requests if "watch" not in r.params]
    pod_list = next(r for r in lists if r.path == POD_PATH)
    assert pod_list.params == {"labelSelector": "a=b", "fieldSelector": "spec.nodeName=n1", "limit": "500"}
    assert any(r.path == LWS_PATH for r in lists)
    watches = plain_watches(recorded)
    # Each informer watches (the fake's watch ends at once, so a busy machine may see reconnects).
    assert {r.path for r in watches} == {POD_PATH, LWS_PATH}
    assert all(r.params["allowWatchBookmarks"] == "true" for r in watches)
    assert {r.params["resourceVersion"] for r in watches} == {"5"}
