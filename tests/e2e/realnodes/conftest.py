"""One cluster with two real nodes for the whole package (docs/real-nodes.md): the manager installed by
`helm install` from its image, two replicas, internal certificate management; the probe workload's
image on every node. Real nodes need root and one machine holds one such cluster at a time."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support import clusters, realnodes
from tests.support.wait import LONG_TIMEOUT, eventually


@pytest.fixture(scope="package")
def real_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    realnodes.require_root()
    options = ClusterOptions(
        nodes=0,
        real_nodes=2,
        node_images=(
            realnodes.manager_image_archive(),
            realnodes.probe_v2_archive(),
            realnodes.upstream_image_archive(),
        ),
        die_with_parent=True,
        supervise=True,
        start_timeout=240,
    )
    yield from clusters.own(request, "real", options)


@pytest.fixture(scope="package")
async def real_api(real_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    api = new_client(ClientOptions(kubeconfig=str(real_cluster.kubeconfig), field_manager="lws-e2e-tests"))
    yield api
    await api.close()


@pytest.fixture(scope="package")
async def installed(real_cluster: LocalCluster, real_api: KubeClient) -> LocalCluster:
    """The chart installed; its two manager pods Available (their readiness includes the webhook
    certificates), so admission works through `lws-webhook-service`."""
    realnodes.helm_install(real_cluster)
    await eventually(
        lambda: realnodes.manager_available(real_api), timeout=LONG_TIMEOUT * 2, message="manager Available"
    )
    return real_cluster


@pytest.fixture
async def real_ns(installed: LocalCluster, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    client = clusters.client_for(installed)
    try:
        yield await clusters.fresh_namespace(client, request)
    finally:
        await client.close()


# The short journey that `make test` (and so CI) runs; LWS_REAL_NODES=all runs the whole real-node suite
# (docs/real-nodes.md says how long each takes).
SHORT_JOURNEY = (
    "test_workers_find_their_leader_over_dns_across_nodes",
    "test_disaggregatedset_roles_find_their_leaders_and_see_their_variables",
    "test_a_worker_process_that_exits_recreates_its_group_once",
)
ALL = os.environ.get("LWS_REAL_NODES") == "all"
# Real kubelets start real containers: the package's cluster (images imported on each node) is set up
# within its first test, and a group's recovery on real nodes takes a minute or more.
REAL_NODE_TIMEOUT = 900


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(
        reason="REAL-NODE SUITE: only its short journey runs in `make test`; "
        "LWS_REAL_NODES=all uv run pytest tests/e2e/realnodes runs it all (docs/real-nodes.md)"
    )
    for item in items:
        if not item.nodeid.startswith("tests/e2e/realnodes/"):
            continue
        item.add_marker(pytest.mark.timeout(REAL_NODE_TIMEOUT))
        if not ALL and item.name not in SHORT_JOURNEY:
            item.add_marker(skip)
