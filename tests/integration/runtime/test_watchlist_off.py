"""Against a kube-apiserver with the WatchList feature gate off: the server refuses the streaming list,
and the informer falls back to a paginated LIST and a watch from its version, and stays there."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.listwatch import HttpListerWatcher
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from leaderworkerset.runtime.reflector import Informer, ReflectorOptions
from leaderworkerset.runtime.resources import NAMESPACES, PODS
from leaderworkerset.runtime.store import Store
from tests.integration.runtime.test_reflector import FlakyListerWatcher, pod, start, stop
from tests.support import clusters
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

NAMESPACE = "watchlist-off"


@pytest.fixture(scope="module")
def watchlist_off_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = ClusterOptions(shape="apiserver", feature_gates="WatchList=false", die_with_parent=True)
    yield from clusters.own(request, "watchlist-off", options)


@pytest.fixture
async def off_client(watchlist_off_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(ClientOptions(kubeconfig=str(watchlist_off_cluster.kubeconfig)))
    await client.apply(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    yield client
    await client.close()


async def test_refused_streaming_list_falls_back_to_paginated_list(off_client: KubeClient) -> None:
    await asyncio.gather(*(off_client.create(PODS, pod(f"p{i:02d}", NAMESPACE, "mine")) for i in range(12)))
    counting = FlakyListerWatcher(HttpListerWatcher(off_client.transport, PODS, NAMESPACE), expire_first=True)
    informer: Informer[Pod] = Informer(
        "pods", counting, Store(POD_CODEC), options=ReflectorOptions(page_size=5, initial_backoff=0.05)
    )
    task = await start(informer)
    try:
        assert len(informer.store) == 12
        assert informer.streamed_lists == 0
        # The first watch after the list expired: the informer lists again (pages, not a stream).
        await eventually(lambda: informer.lists >= 2)
        await off_client.create(PODS, pod("later", NAMESPACE, "mine"))
        await eventually(lambda: len(informer.store) == 13)
        assert counting.list_calls == 1 + 2, "one refused streaming list, then two paginated lists"
    finally:
        await stop(task)
