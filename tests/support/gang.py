"""Shared by the gang-scheduling e2e modules: `lws manager` with a scheduler provider, in a cluster of
the module's own, and the set's pods as the scheduler left them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import PODS
from tests.e2e.conftest import MANAGERS
from tests.support import clusters, volcano
from tests.support.manager import ManagerProcess

Obj = dict[str, Any]
CONFIG = """apiVersion: config.lws.x-k8s.io/v1
kind: Configuration
gangSchedulingManagement:
  schedulerProvider: {provider}
featureGates:
  WorkloadAwareScheduling: true
"""


@contextlib.asynccontextmanager
async def manager_with(cluster: LocalCluster, provider: str) -> AsyncIterator[ManagerProcess]:
    """`lws manager` (controllers + webhooks) with `provider`; one at a time in this cluster."""
    config = cluster.workdir / f"lws-config-{provider}.yaml"
    config.write_text(CONFIG.format(provider=provider))
    manager = ManagerProcess(cluster, name=f"lws-manager-{provider}", config=config)
    MANAGERS.append(manager)
    await manager.start()
    try:
        yield manager
    finally:
        await manager.stop()
        MANAGERS.remove(manager)


async def namespaces(cluster: LocalCluster, request: pytest.FixtureRequest, count: int) -> list[str]:
    kube = clusters.client_for(cluster)
    try:
        return [await clusters.fresh_namespace(kube, request) for _ in range(count)]
    finally:
        await kube.close()


async def set_pods(api: KubeClient, ns: str) -> list[Obj]:
    return await api.list(PODS, ns, label_selector=c.LABEL_SET_NAME)


def scheduled(pods: list[Obj]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


async def api_with_crds(cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """A client of `cluster` once our CRDs and Volcano's PodGroup CRD are installed."""
    kube = clusters.client_for(cluster)
    try:
        await volcano.install_pod_group_crd(kube)
    finally:
        await kube.close()
    async for api in clusters.api_with_crds(cluster):
        yield api
