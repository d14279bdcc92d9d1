"""A full local cluster of its own for the install tests, with the CRDs and the generated install.

Its own cluster because these tests decide which controller runs (ours under its ServiceAccount,
upstream's Go manager): the session's shared `lws_manager` must not be reconciling beside them.
The install is applied with the manager Deployment scaled to zero: kwok's fake nodes cannot run
the image, so the manager runs as a local process, under the install's ServiceAccount.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.webhooks.certs import MUTATING_CONFIGURATIONS as MUTATING
from leaderworkerset.webhooks.certs import VALIDATING_CONFIGURATIONS as VALIDATING
from tests.e2e.conftest import MANAGERS
from tests.support import clusters, serviceaccount
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually


@dataclass
class InstallEnv:
    cluster: LocalCluster
    api: KubeClient

    def token(self, service_account: str, namespace: str = c.DEFAULT_NAMESPACE) -> str:
        return serviceaccount.token(self.cluster, service_account, namespace)

    def kubeconfig_as(self, service_account: str, path: Path) -> Path:
        return serviceaccount.kubeconfig_as(self.cluster, service_account, path)


@pytest.fixture(scope="package")
def upstream_binary() -> Path:
    """Upstream's controller, built from the sigs.k8s.io/lws module (cached): the other side of every swap."""
    return tools.ensure_tool(tools.UPSTREAM_LWS)


@pytest.fixture(scope="package")
async def install_env() -> AsyncIterator[InstallEnv]:
    workdir = Path(tempfile.mkdtemp(prefix="lws-test-install-"))
    options = ClusterOptions(shape="full", nodes=4, die_with_parent=True)
    cluster = LocalCluster("test-install", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    clusters.STARTED.append(cluster)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    try:
        await install_crds(api.lightkube)
        await serviceaccount.install_for_local_manager(api)
        yield InstallEnv(cluster, api)
    finally:
        await api.close()
        clusters.stop(cluster)


async def started(manager: ManagerProcess, api: KubeClient | None = None) -> ManagerProcess:
    """Start it; with ``api``, also wait until the API server calls *its* webhooks (dev URL mode).

    /readyz turns ready when the certificates are in place, a moment before the manager has pointed
    the webhook configurations at its own port; a new manager on new ports must not be raced.
    """
    MANAGERS.append(manager)  # its log tail is attached to a failing test's report
    await manager.start()
    if api is not None:

        async def pointed_here() -> bool:
            for ref, name in (
                (MUTATING, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
                (VALIDATING, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
            ):
                configuration = await api.get(ref, None, name)
                for webhook in configuration["webhooks"]:
                    client_config = webhook["clientConfig"]
                    url = client_config.get("url", "")
                    assert f":{manager.webhook_port}/" in url, f"{name} still calls {url}"
                    assert client_config.get("caBundle"), f"{name} has no caBundle yet"
            return True

        await eventually(pointed_here, timeout=LONG_TIMEOUT)
    return manager


async def stopped(manager: ManagerProcess) -> None:
    await manager.stop()
    if manager in MANAGERS:
        MANAGERS.remove(manager)
