"""One cluster with three real nodes for the whole package (docs/real-nodes.md): the manager installed
by `helm install` from its image, two replicas, internal certificate management; the probe workload's
image on every node, and the Ray and JAX examples' images imported when a test first needs them. Real
nodes need root and one machine holds one such cluster at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support import clusters, realnodes, workloads
from tests.support.wait import LONG_TIMEOUT, eventually


@pytest.fixture(scope="package")
def real_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    realnodes.require_root()
    options = ClusterOptions(
        nodes=0,
        real_nodes=3,
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


@pytest.fixture(params=[workloads.RAY, workloads.JAX], ids=lambda e: e.runtime)
def example(request: pytest.FixtureRequest, installed: LocalCluster) -> workloads.Example:
    """Each workload example in turn (docs/examples/), its image on every node."""
    chosen: workloads.Example = request.param
    workloads.ensure_image(installed, chosen)
    return chosen


@pytest.fixture
async def example_ns(real_ns: str, real_api: KubeClient, example: workloads.Example) -> AsyncIterator[str]:
    """A namespace for one example; its groups are gone again when the test ends, so that the next test
    has the nodes' CPUs to itself."""
    yield real_ns
    await workloads.remove_example(real_api, real_ns, example)


# The short journey that `make test` (and so CI) runs; LWS_REAL_NODES names the long suites to run as well
# (tests/support/realnodes.py; docs/real-nodes.md says how long each takes).
SHORT_JOURNEY = (
    "test_workers_find_their_leader_over_dns_across_nodes",
    "test_disaggregatedset_roles_find_their_leaders_and_see_their_variables",
    "test_a_worker_process_that_exits_recreates_its_group_once",
    # The workload examples: JAX's formation and a crash (its image and groups are lighter than Ray's).
    "test_groups_form_and_every_rank_answers_through_the_service[jax]",
    "test_a_killed_worker_runtime_recreates_its_group_once[jax]",
)
# Real kubelets start real containers: the package's cluster (images imported on each node) is set up
# within its first test, and a group's recovery on real nodes takes a minute or more.
REAL_NODE_TIMEOUT = 900


def suite_of(item: pytest.Item) -> str:
    return "workloads" if item.path.name.startswith("test_workload") else "probe"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        chosen = realnodes.chosen_suites()
    except ValueError as err:
        raise pytest.UsageError(str(err)) from err
    for item in items:
        if not item.nodeid.startswith("tests/e2e/realnodes/"):
            continue
        item.add_marker(pytest.mark.timeout(REAL_NODE_TIMEOUT))
        # Under xdist, after every other test and with the other workers gone: real runtimes form within
        # timeouts that a second worker's clusters on the same two cores would eat into.
        item.add_marker(pytest.mark.alone("real containers need the machine's CPUs to themselves"))
        suite = suite_of(item)
        if item.name not in SHORT_JOURNEY and suite not in chosen:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"LONG REAL-NODE SUITE ({suite}): not in `make test`; run it with "
                    f"`sudo LWS_REAL_NODES={suite} uv run pytest tests/e2e/realnodes` (docs/real-nodes.md)"
                )
            )
