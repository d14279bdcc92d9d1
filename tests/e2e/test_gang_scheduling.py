"""A real gang on a real scheduler: kube-scheduler with the Workload API (GenericWorkload) and
`lws manager` (schedulerProvider: kubernetes) as a separate process, webhooks included.

Three fake nodes with one CPU each, pods asking for 600m: room for exactly three pods. A group of
four with `spec.scheduling` (one gang per replica) must stay entirely unscheduled; the same group
without it gets three pods placed; a fourth node lets the whole gang in at once. The Hash variant
does the same with a group one pod larger than the nodes present.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling.volcano import VOLCANO_POD_GROUPS
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS
from tests.e2e.conftest import MANAGERS
from tests.support import clusters, upstream, volcano
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
CONFIG = """apiVersion: config.lws.x-k8s.io/v1
kind: Configuration
gangSchedulingManagement:
  schedulerProvider: {provider}
featureGates:
  WorkloadAwareScheduling: true
"""


def _node(i: int) -> NodeSpec:
    return NodeSpec(name=f"gang-node-{i}", index=i, cpu="1", memory="4Gi", gpus=0, tpus=0)


@pytest.fixture(scope="module")
def gang_full_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    workdir = Path(tempfile.mkdtemp(prefix="lws-test-gang-full-"))
    options = ClusterOptions(shape="full", node_specs=[_node(i) for i in range(3)], die_with_parent=True)
    cluster = LocalCluster(
        f"test-gang-full-{clusters.worker_id(request)}",
        workdir,
        build.ensure_binaries(),
        options.with_workload_api(),
    )
    cluster.start()
    clusters.STARTED.append(cluster)
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="module")
async def gang_api(gang_full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    kube = clusters.client_for(gang_full_cluster)
    try:
        await install_crds(kube)
        await volcano.install_pod_group_crd(kube)
    finally:
        await kube.close()
    api = new_client(
        ClientOptions(kubeconfig=str(gang_full_cluster.kubeconfig), field_manager="lws-e2e-tests")
    )
    yield api
    await api.close()


@contextlib.asynccontextmanager
async def manager_with(cluster: LocalCluster, provider: str) -> AsyncIterator[ManagerProcess]:
    """`lws manager` (controllers + webhooks) with `provider`; one at a time in this cluster."""
    config = cluster.workdir / f"lws-config-{provider}.yaml"
    config.write_text(CONFIG.format(provider=provider))
    manager = ManagerProcess(cluster, name=f"lws-manager-{provider}", config=config)
    MANAGERS.append(manager)
    await manager.start()
    try:
        yield manager
    finally:
        await manager.stop()
        MANAGERS.remove(manager)


async def _namespaces(cluster: LocalCluster, request: pytest.FixtureRequest, count: int) -> list[str]:
    kube = clusters.client_for(cluster)
    try:
        return [await clusters.fresh_namespace(kube, request) for _ in range(count)]
    finally:
        await kube.close()


def _lws(ns: str, gang: bool) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns).replicas(1).size(4).no_leader_template().worker_requests({"cpu": "600m"})
    )
    return (builder.scheduling({}) if gang else builder).obj()


async def _pods(api: KubeClient, ns: str) -> list[Obj]:
    return await api.list(PODS, ns, label_selector=c.LABEL_SET_NAME)


def _scheduled(pods: list[Obj]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


async def _all_pods_created(api: KubeClient, ns: str, count: int = 4) -> list[Obj]:
    async def check() -> list[Obj]:
        pods = await _pods(api, ns)
        assert len(pods) == count, [p["metadata"]["name"] for p in pods]
        return pods

    result: list[Obj] = await eventually(check)
    return result


async def _scheduler_saw_all(api: KubeClient, ns: str, count: int = 4) -> None:
    """Positive sign before a negative check: each pod is marked unschedulable by the scheduler."""

    async def check() -> bool:
        pods = await _pods(api, ns)
        verdicts = [
            next(
                (
                    x.get("status")
                    for x in p.get("status", {}).get("conditions") or []
                    if x["type"] == "PodScheduled"
                ),
                None,
            )
            for p in pods
        ]
        assert verdicts == ["False"] * count, verdicts
        return True

    await eventually(check)


async def test_a_gang_is_all_or_nothing_on_kube_scheduler(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    async with manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_KUBERNETES):
        await _all_or_nothing(gang_api, *await _namespaces(gang_full_cluster, request, 2))


async def _all_or_nothing(api: KubeClient, gang_ns: str, plain_ns: str) -> None:

    # 1. The gang of four on three one-pod nodes: every pod in its PodGroup, none placed.
    await api.create(LEADERWORKERSETS, _lws(gang_ns, gang=True))
    pods = await _all_pods_created(api, gang_ns)
    assert all(p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in pods)
    await _scheduler_saw_all(api, gang_ns)
    await consistently(lambda: _none_scheduled(api, gang_ns))

    # 2. The same group without spec.scheduling: three of four are placed (no gang).
    await api.create(LEADERWORKERSETS, _lws(plain_ns, gang=False))

    async def three_placed() -> bool:
        pods = await _pods(api, plain_ns)
        assert (len(pods), _scheduled(pods)) == (4, 3), [
            (p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods
        ]
        return True

    await eventually(three_placed)
    await api.delete(LEADERWORKERSETS, plain_ns, "test-sample")

    async def plain_gone() -> bool:
        assert await _pods(api, plain_ns) == []
        return True

    # Garbage collection (kube-controller-manager) and the kwok pod reaper free the nodes; both are
    # slower than one reconcile on a loaded 2-core machine.
    await eventually(plain_gone, timeout=LONG_TIMEOUT)

    # 3. A fourth node: the whole gang is placed together.
    await api.create(NODES, _node(3).manifest())

    async def all_placed() -> bool:
        pods = await _pods(api, gang_ns)
        assert _scheduled(pods) == 4, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]
        return True

    await eventually(all_placed, timeout=LONG_TIMEOUT)
    await api.delete(LEADERWORKERSETS, gang_ns, "test-sample")  # the next test's manager starts clean


async def _none_scheduled(api: KubeClient, ns: str) -> bool:
    return _scheduled(await _pods(api, ns)) == 0


async def test_a_hash_gang_is_all_or_nothing_on_kube_scheduler(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    """The same check with groupIdentity Hash: the leader comes from the Deployment, its PodGroup
    is made per group key while the replacement gate holds it, then the whole gang is placed."""
    nodes = [
        n["metadata"]["name"]
        for n in await gang_api.list(NODES)
        if n["metadata"]["name"].startswith("gang-node-")
    ]
    size = len(nodes) + 1  # one pod more than the nodes can hold
    [ns] = await _namespaces(gang_full_cluster, request, 1)
    builder = (
        LeaderWorkerSetBuilder(ns)
        .replicas(1)
        .size(size)
        .no_leader_template()
        .worker_requests({"cpu": "600m"})
        .group_identity(c.GROUP_IDENTITY_HASH)
        .scheduling({})
    )
    async with manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_KUBERNETES):
        await gang_api.create(LEADERWORKERSETS, builder.obj())
        pods = await _all_pods_created(gang_api, ns, size)
        [leader] = [p for p in pods if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0"]
        key = leader["metadata"]["labels"][c.LABEL_GROUP_INDEX]
        assert len(key) == 40  # a Hash group key, not an ordinal
        assert not leader["spec"].get("schedulingGates")  # admitted once its PodGroup existed
        lws = await gang_api.get(LEADERWORKERSETS, ns, "test-sample")
        revision = leader["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
        want = wl.runtime_name(wl.lws_workload_name(lws), key, revision)
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {want}
        await _scheduler_saw_all(gang_api, ns, size)
        await consistently(lambda: _none_scheduled(gang_api, ns))

        await gang_api.create(NODES, _node(len(nodes)).manifest())

        async def all_placed() -> bool:
            placed = _scheduled(await _pods(gang_api, ns))
            assert placed == size, placed
            return True

        await eventually(all_placed, timeout=LONG_TIMEOUT)
        await gang_api.delete(LEADERWORKERSETS, ns, "test-sample")


async def test_upstream_volcano_example_gets_its_pod_groups_through_the_real_webhook(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    """`sample_gang-scheduling_lws-sample-volcano.yaml` through webhooks, controllers and the
    StatefulSet controller: every pod names its group's PodGroup, and each PodGroup exists. No
    Volcano scheduler runs here (its module is not served by the Go proxy), so pods stay pending."""
    path = upstream.require("examples", "sample_gang-scheduling_lws-sample-volcano.yaml")
    sample = yaml.safe_load(path.read_text())
    [ns] = await _namespaces(gang_full_cluster, request, 1)
    sample["metadata"]["namespace"] = ns
    async with manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_VOLCANO):
        await gang_api.create(LEADERWORKERSETS, sample)

        async def pods_and_groups() -> bool:
            pods = await _pods(gang_api, ns)
            assert len(pods) == 8, [p["metadata"]["name"] for p in pods]
            named = {p["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] for p in pods}
            groups = {g["metadata"]["name"]: g for g in await gang_api.list(VOLCANO_POD_GROUPS, ns)}
            assert named == set(groups), (named, set(groups))
            assert len(groups) == 2
            for group in groups.values():
                assert group["spec"] == {"minMember": 4, "minResources": {"cpu": "200m"}}
            return True

        await eventually(pods_and_groups, timeout=LONG_TIMEOUT)
        assert _scheduled(await _pods(gang_api, ns)) == 0  # schedulerName volcano: nobody binds them
        await gang_api.delete(LEADERWORKERSETS, ns, "lws-sample-volcano")
