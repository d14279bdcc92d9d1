"""Gang-scheduling fixtures: a separate apiserver-shape cluster that serves the Workload API
(GenericWorkload, scheduling.k8s.io/v1beta1) and has Volcano's PodGroup CRD installed.

A separate cluster keeps these managers — each configured with a scheduler provider and scoped
to its test's namespace — from meeting the suite's shared, provider-less manager.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
from lightkube import AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support import clusters, volcano
from tests.support.inprocess import running_controllers


@pytest.fixture(scope="session")
def gang_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("apiserver", clusters.worker_id(request), workload_api=True)
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="session")
async def gang_kube(gang_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = clusters.client_for(gang_cluster)
    await install_crds(client)
    await volcano.install_pod_group_crd(client)
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def gang_api(gang_cluster: LocalCluster, gang_kube: AsyncClient) -> AsyncIterator[KubeClient]:
    client = new_client(ClientOptions(kubeconfig=str(gang_cluster.kubeconfig)))
    yield client
    await client.close()


@contextlib.asynccontextmanager
async def provider_manager(
    cluster: LocalCluster, provider: str | None, namespace: str
) -> AsyncIterator[RegisteredControllers]:
    """The LWS and pod controllers with `provider` (None: no provider), watching only `namespace`."""
    async with running_controllers(
        cluster, namespace=namespace, scheduler_provider=provider, enable_disaggregatedset=False
    ) as registered:
        yield registered


@pytest.fixture
async def volcano_ns(
    gang_cluster: LocalCluster, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    namespace = await clusters.fresh_namespace(gang_kube, request)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_VOLCANO, namespace):
        yield namespace


@pytest.fixture
async def workload_ns(
    gang_cluster: LocalCluster, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    namespace = await clusters.fresh_namespace(gang_kube, request)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, namespace):
        yield namespace
