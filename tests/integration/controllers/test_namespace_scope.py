"""`lws manager --watch-namespace`: the controllers' caches hold only that namespace's objects,
filtered by the API server, so a scoped manager neither sees nor acts on other namespaces."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest
from lightkube import AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from leaderworkerset.controllers.informers import shared_informers
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = pytest.mark.cluster


async def test_scoped_caches_see_only_their_namespace(
    kube: AsyncClient, apiserver_cluster: LocalCluster, namespace: str
) -> None:
    await install_crds(kube)
    other = f"other-{uuid.uuid4().hex[:6]}"
    await kube.create(Namespace(metadata=ObjectMeta(name=other)))
    client: KubeClient = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    cache = Cache(client)
    informers = shared_informers(cache, namespace)
    running = asyncio.create_task(cache.run())
    try:
        await asyncio.wait_for(cache.wait_for_sync(), timeout=60)
        # The other namespace's object goes first: an unscoped cache (one cluster-wide watch,
        # ordered by resourceVersion) would deliver it before the one we wait for below.
        for ns in (other, namespace):
            await client.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, "scoped").obj())

        await eventually(lambda: informers.lws.store.get(ObjectKey(namespace, "scoped")) is not None)
        await consistently(lambda: informers.lws.store.get(ObjectKey(other, "scoped")) is None)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await client.close()
