"""The DisaggregatedSet controller alone, in-process on the test's event loop (apiserver shape).

No LWS controller runs: the tests play it by writing child LWS status themselves (`play_lws`),
so each assertion is about what the DS controller did with exactly that input.
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

pytestmark = [pytest.mark.cluster]


@pytest.fixture(scope="session")
async def api(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(
        ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig), field_manager="lws-tests")
    )
    yield client
    await client.close()


# Package scope: the DS controller stops with this package, like the LWS one (one controller of a
# kind on the shared API server at a time).
@pytest.fixture(scope="package")
async def ds_controller(
    kube: AsyncClient, apiserver_cluster: LocalCluster
) -> AsyncIterator[RegisteredControllers]:
    await install_crds(kube)
    async with running_controllers(apiserver_cluster, enable_leaderworkerset=False) as registered:
        yield registered


@pytest.fixture
async def ns(namespace: str, ds_controller: RegisteredControllers) -> str:
    return namespace
