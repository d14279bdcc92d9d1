"""Runtime integration fixtures: our KubeClient against the session's real kube-apiserver."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client


@pytest.fixture
async def client(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    kube_client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    yield kube_client
    await kube_client.close()
