"""A module's own full cluster for the ecosystem tests (tests/e2e/ecosystem): nodes chosen by the
test (GPU capacity, hostnames), optionally the resource metrics API (kwok's simulated kubelets +
metrics-server, devcluster/metrics.py), our CRDs and its own `lws manager`.

    @pytest.fixture(scope="module")
    async def env() -> AsyncIterator[EcosystemEnv]:
        async with ecosystem_env("llmd", gpu_nodes(6)) as started:
            yield started
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster import metrics as resource_metrics
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import NAMESPACES
from tests.support import clusters
from tests.support.manager import ManagerProcess


@dataclass
class EcosystemEnv:
    cluster: LocalCluster
    api: KubeClient
    manager: ManagerProcess

    async def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        await self.api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name


def gpu_nodes(count: int, *, gpus: int = 8, cpu: str = "64") -> list[NodeSpec]:
    """`count` kwok nodes with GPUs, each its own hostname (and pod CIDR)."""
    return [NodeSpec(name=f"gpu-node-{i}", index=i, gpus=gpus, cpu=cpu, tpus=0) for i in range(count)]


@contextlib.asynccontextmanager
async def ecosystem_env(
    name: str, nodes: list[NodeSpec], *, metrics: bool = False, managers: list[Any] | None = None
) -> AsyncIterator[EcosystemEnv]:
    """Start the cluster (and metrics-server when `metrics`), install the CRDs, run a manager; stop
    everything on exit. `managers` (tests/e2e/conftest.MANAGERS) gets the manager while it runs, so
    a failing test's report carries its log."""
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-test-{name}-"))
    options = ClusterOptions(
        shape="full", node_specs=nodes, die_with_parent=True, supervise=True, kubelet_metrics=metrics
    )
    cluster = LocalCluster(f"test-{name}", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    clusters.STARTED.append(cluster)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    manager = ManagerProcess(cluster, name=f"lws-manager-{name}")
    try:
        if metrics:
            await asyncio.to_thread(resource_metrics.start, cluster)
        await install_crds(api.lightkube)
        if managers is not None:
            managers.append(manager)
        await manager.start()
        yield EcosystemEnv(cluster, api, manager)
    finally:
        await manager.stop()
        if managers is not None and manager in managers:
            managers.remove(manager)
        await api.close()
        clusters.stop(cluster)
