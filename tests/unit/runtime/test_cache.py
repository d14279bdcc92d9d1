"""Cache: informers declared once per name, synced together, server-side filters in the request."""

from __future__ import annotations

import asyncio
import json

import pytest

from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.projections import POD_CODEC
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS
from tests.unit.runtime.builders import list_body, obj
from tests.unit.runtime.fakes import settle
from tests.unit.runtime.test_client import Recorded, make_client


def test_informer_names_must_be_unique() -> None:
    cache = Cache(make_client(Recorded()))
    cache.informer(PODS, POD_CODEC)
    with pytest.raises(ValueError, match="already declared"):
        cache.informer(PODS, POD_CODEC)
    cache.informer(PODS, POD_CODEC, name="leader-pods", label_selector="role=leader")
    assert sorted(cache.informers) == ["leader-pods", "pods.core"]


async def test_list_request_carries_namespace_and_selectors() -> None:
    body = list_body([obj("p")], rv="5")
    recorded = Recorded()
    recorded.body = json.loads(body)
    cache = Cache(make_client(recorded))
    cache.informer(PODS, POD_CODEC, namespace="ns", label_selector="a=b", field_selector="spec.nodeName=n1")
    cache.informer(LEADERWORKERSETS, DictCodec(), namespace="ns")
    assert not cache.has_synced()
    runner = asyncio.create_task(cache.run())
    await asyncio.wait_for(cache.wait_for_sync(), 5)
    assert cache.has_synced()
    await settle()  # both informers move on to their watches
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    lists = [r for r in recorded.requests if "watch" not in r.url.params]
    pod_list = next(r for r in lists if r.url.path == "/api/v1/namespaces/ns/pods")
    assert dict(pod_list.url.params) == {
        "labelSelector": "a=b",
        "fieldSelector": "spec.nodeName=n1",
        "limit": "500",
    }
    assert any(
        r.url.path == "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets" for r in lists
    )
    watches = [r for r in recorded.requests if r.url.params.get("watch") == "true"]
    # Each informer watches (the fake's watch ends at once, so a busy machine may see reconnects).
    assert {r.url.path for r in watches} == {
        "/api/v1/namespaces/ns/pods",
        "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets",
    }
    assert all(r.url.params["allowWatchBookmarks"] == "true" for r in watches)
    assert {r.url.params["resourceVersion"] for r in watches} == {"5"}
