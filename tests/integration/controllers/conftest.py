"""The LWS and pod controllers running in-process on the test's event loop (apiserver shape).

One manager per session serves every test; each test works in a fresh namespace. The tests play
the StatefulSet controller, the kubelet and the pod webhook (tests/support/kubelet.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from lightkube import AsyncClient

from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support.inprocess import running_controllers


@pytest.fixture(scope="session")
async def api(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """Dict-level client the tests use to act as the other Kubernetes components."""
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def lws_controllers(
    kube: AsyncClient, apiserver_cluster: LocalCluster
) -> AsyncIterator[RegisteredControllers]:
    await install_crds(kube)
    async with running_controllers(apiserver_cluster, enable_disaggregatedset=False) as registered:
        yield registered


@pytest.fixture
async def ns(namespace: str, lws_controllers: RegisteredControllers) -> str:
    """A fresh namespace with the controllers running."""
    return namespace
