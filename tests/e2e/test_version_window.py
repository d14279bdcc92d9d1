"""What differs across the supported window (1.34-1.38) for gang scheduling, on a cluster of the
version under test (LWS_KUBERNETES_VERSION; `make matrix` runs this on each).

None of these clusters serves the Workload API that the `kubernetes` provider needs (1.34 has none,
1.35 and 1.36 serve other shapes, 1.37 and 1.38 serve it only behind GenericWorkload, which this cluster
does not turn on). So, as upstream v1.0 does, a new `spec.scheduling` is refused by the webhook naming the
missing API, and the manager does not start its controllers with that provider, naming the version;
Volcano, which needs no Kubernetes API of its own, works on every version.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling.volcano import VOLCANO_POD_GROUPS
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.e2e.conftest import MANAGERS
from tests.support import clusters, gang, upstream
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

MISSING_API = "spec.scheduling: Forbidden: scheduling.k8s.io/v1beta1 Workload API is not available"


@pytest.fixture(scope="module")
def window_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from clusters.own(request, "window", ClusterOptions(shape="full", nodes=3, die_with_parent=True))


@pytest.fixture(scope="module")
async def window_api(window_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async for api in gang.api_with_crds(window_cluster):
        yield api


def served_scheduling_versions(cluster: LocalCluster) -> list[str]:
    group = RestClient.from_kubeconfig(cluster.kubeconfig).get("/apis/scheduling.k8s.io")
    assert group is not None
    return sorted(v["version"] for v in group["versions"])


def manager_for(cluster: LocalCluster, provider: str, *args: str) -> ManagerProcess:
    config = cluster.workdir / f"lws-config-window-{provider}.yaml"
    config.write_text(gang.CONFIG.format(provider=provider))
    return ManagerProcess(
        cluster, name=f"lws-manager-window-{provider}{''.join(args)}", config=config, extra_args=args
    )


async def test_the_kubernetes_provider_stops_the_manager_naming_the_version(
    window_api: KubeClient, window_cluster: LocalCluster
) -> None:
    assert "v1beta1" not in served_scheduling_versions(window_cluster), "this cluster serves the Workload API"
    manager = manager_for(window_cluster, c.SCHEDULER_PROVIDER_KUBERNETES)
    proc = window_cluster.attach(manager.name, manager.argv)
    code = await asyncio.to_thread(proc.wait, LONG_TIMEOUT)
    assert code != 0
    version = await window_api.server_version()
    assert version == window_cluster.kubernetes_version
    log = manager.log_text()
    assert f"which it does not (Kubernetes {version}): it is served from Kubernetes 1.37 on" in log, log[
        -2000:
    ]


async def test_the_webhook_refuses_a_new_spec_scheduling_naming_the_missing_api(
    window_api: KubeClient, window_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    [ns] = await gang.namespaces(window_cluster, request, 1)
    webhooks = manager_for(window_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, "--webhooks-only")
    MANAGERS.append(webhooks)
    await webhooks.start()
    try:
        gang_lws = LeaderWorkerSetBuilder(ns, "gang").replicas(1).size(2).scheduling({}).obj()
        with pytest.raises(ApiStatusError) as refused:
            await window_api.create(LEADERWORKERSETS, gang_lws)
        assert MISSING_API in str(refused.value)
        # Nothing half-applied; the same set without spec.scheduling is admitted.
        assert await window_api.get_or_none(LEADERWORKERSETS, ns, "gang") is None
        await window_api.create(
            LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, "plain").replicas(1).size(2).obj()
        )
    finally:
        await webhooks.stop()
        MANAGERS.remove(webhooks)


async def test_upstream_volcano_example_gets_its_pod_groups_through_the_real_webhook(
    window_api: KubeClient, window_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    """`sample_gang-scheduling_lws-sample-volcano.yaml` through webhooks, controllers and the
    StatefulSet controller: every pod names its group's PodGroup, and each PodGroup exists. No
    Volcano scheduler runs here (its module is not served by the Go proxy), so pods stay pending."""
    path = upstream.require("examples", "sample_gang-scheduling_lws-sample-volcano.yaml")
    sample = yaml.safe_load(path.read_text())
    [ns] = await gang.namespaces(window_cluster, request, 1)
    sample["metadata"]["namespace"] = ns
    async with gang.manager_with(window_cluster, c.SCHEDULER_PROVIDER_VOLCANO):
        await window_api.create(LEADERWORKERSETS, sample)

        async def pods_and_groups() -> bool:
            pods = await gang.set_pods(window_api, ns)
            assert len(pods) == 8, [p["metadata"]["name"] for p in pods]
            named = {p["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] for p in pods}
            groups = {g["metadata"]["name"]: g for g in await window_api.list(VOLCANO_POD_GROUPS, ns)}
            assert named == set(groups), (named, set(groups))
            assert len(groups) == 2
            for group in groups.values():
                assert group["spec"] == {"minMember": 4, "minResources": {"cpu": "200m"}}
            return True

        await eventually(pods_and_groups, timeout=LONG_TIMEOUT)
        assert (
            gang.scheduled(await gang.set_pods(window_api, ns)) == 0
        )  # schedulerName volcano: nobody binds them
        await window_api.delete(LEADERWORKERSETS, ns, "lws-sample-volcano")
