"""E2E fixtures: the full local cluster with our CRDs and `lws manager` running as a separate process.

* ``lws_manager`` — session-scoped: CRDs installed into ``full_cluster``, one manager process
  (controllers + admission webhooks) shared by every e2e test; a test may kill and restart it
  (``restartable_manager`` guarantees it runs again afterwards).
* ``api`` — dict-level client (``KubeClient``) of the full cluster, the same vocabulary as the
  integration tests' ``expect_*`` helpers.
* ``ns`` — a fresh namespace with the manager running.
* ``samples_env`` — module-scoped: a second full cluster whose nodes fit upstream's samples and
  examples unchanged (GPUs, TPUs with their node labels, large CPU/memory/ephemeral storage, one
  node pool per node, static volumes of class ``default``), with its own manager.

When an e2e test fails, the tail of the manager's log is attached to the report beside the
cluster components' logs.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.api.installation import SERVICE_ACCOUNT_NAME
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import ResourceRef
from tests.support import clusters, serviceaccount
from tests.support.manager import ManagerProcess

MANAGERS: list[ManagerProcess] = []


@pytest.fixture(scope="session")
async def api(full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(
        ClientOptions(
            kubeconfig=str(full_cluster.kubeconfig), qps=200, burst=400, field_manager="lws-e2e-tests"
        )
    )
    yield client
    await client.close()


# LWS_E2E_AS_SERVICE_ACCOUNT=1: the shared manager runs under the install's ServiceAccount (generated
# RBAC only, via a TokenRequest token), and the session fails if its log shows an RBAC refusal.
AS_SERVICE_ACCOUNT = os.environ.get("LWS_E2E_AS_SERVICE_ACCOUNT") == "1"


@pytest.fixture(scope="session")
async def lws_manager(
    full_cluster: LocalCluster, full_kube: AsyncClient, api: KubeClient
) -> AsyncIterator[ManagerProcess]:
    await install_crds(full_kube)
    kubeconfig = None
    if AS_SERVICE_ACCOUNT:
        await serviceaccount.install_for_local_manager(api)
        kubeconfig = serviceaccount.kubeconfig_as(
            full_cluster, SERVICE_ACCOUNT_NAME, full_cluster.workdir / "manager-as-sa.kubeconfig"
        )
    async for manager in running_manager(full_cluster, kubeconfig=kubeconfig):
        yield manager
    if AS_SERVICE_ACCOUNT:
        refused = serviceaccount.rbac_denials(manager.log_text())
        assert not refused, "RBAC refused the manager under its ServiceAccount:\n" + "\n".join(refused[:20])


async def running_manager(
    cluster: LocalCluster, name: str = "lws-manager-e2e", *, kubeconfig: Path | None = None
) -> AsyncIterator[ManagerProcess]:
    """An `lws manager` process for as long as the caller (a fixture's `async for`) keeps it, listed in
    MANAGERS so that a failing test shows its log."""
    manager = ManagerProcess(cluster, name=name, kubeconfig=kubeconfig)
    MANAGERS.append(manager)
    await manager.start()
    yield manager
    await manager.stop()
    MANAGERS.remove(manager)


@pytest.fixture
async def ns(full_namespace: str, lws_manager: ManagerProcess) -> str:
    """A fresh namespace; the shared manager is running."""
    if not lws_manager.running:  # a previous test killed it and failed before restarting it
        await lws_manager.start()
    return full_namespace


@pytest.fixture
async def restartable_manager(lws_manager: ManagerProcess) -> AsyncIterator[ManagerProcess]:
    """The shared manager, for a test that kills it; it is running again when the test ends."""
    yield lws_manager
    if not lws_manager.running:
        await lws_manager.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for manager in MANAGERS:
            report.sections.append((f"{manager.name} log", manager.log_tail(60)))


# ----- a cluster sized for upstream's samples and examples ---------------------------------------
TPU_LABELS = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "4x4",
}


@dataclass(frozen=True)
class BigNode(NodeSpec):
    """A fake node with ephemeral storage too (vLLM's example requests 800Gi of it per pod)."""

    ephemeral_storage: str = "16Ti"

    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        for key in ("allocatable", "capacity"):
            manifest["status"][key] = {**manifest["status"][key], "ephemeral-storage": self.ephemeral_storage}
        return manifest


def sample_nodes(count: int = 4) -> list[NodeSpec]:
    """Nodes that fit every upstream example unchanged: 125 CPUs / 1124Gi / 8 GPUs per vLLM pod,
    TPU node selectors, one node pool per node (exclusive placement of 3 groups needs 3 pools)."""
    return [
        BigNode(
            name=f"big-node-{i}",
            index=i,
            nodepool=f"big-pool-{i}",
            cpu="1000",
            memory="16Ti",
            gpus=64,
            tpus=64,
            extra_labels=TPU_LABELS,
        )
        for i in range(count)
    ]


def persistent_volumes(count: int, storage_class: str = "default") -> list[dict[str, Any]]:
    """Pre-provisioned volumes: the local cluster has no provisioner for volumeClaimTemplates."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"e2e-pv-{i}"},
            "spec": {
                "capacity": {"storage": "100Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/tmp/e2e-pv-{i}"},
            },
        }
        for i in range(count)
    ]


@dataclass
class SamplesEnv:
    cluster: LocalCluster
    api: KubeClient
    manager: ManagerProcess


@pytest.fixture(scope="module")
async def samples_env() -> AsyncIterator[SamplesEnv]:
    """A second full cluster (started for the samples module only) with big nodes, static
    volumes of class `default`, the CRDs and its own manager."""
    workdir = Path(tempfile.mkdtemp(prefix="lws-test-samples-"))
    options = ClusterOptions(shape="full", node_specs=sample_nodes(), die_with_parent=True)
    cluster = LocalCluster("test-samples", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    clusters.STARTED.append(cluster)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    manager = ManagerProcess(cluster, name="lws-manager-samples")
    try:
        await install_crds(api.lightkube)
        await api.create(STORAGE_CLASSES, NO_PROVISIONER_CLASS)
        for volume in persistent_volumes(8):
            await api.create(PERSISTENT_VOLUMES, volume)
        MANAGERS.append(manager)
        await manager.start()
        yield SamplesEnv(cluster, api, manager)
    finally:
        await manager.stop()
        if manager in MANAGERS:
            MANAGERS.remove(manager)
        await api.close()
        clusters.stop(cluster)


STORAGE_CLASSES = ResourceRef("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False)
PERSISTENT_VOLUMES = ResourceRef("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False)
NO_PROVISIONER_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "default"},
    "provisioner": "kubernetes.io/no-provisioner",
    "volumeBindingMode": "Immediate",
}
