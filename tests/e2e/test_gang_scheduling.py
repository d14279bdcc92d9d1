"""A real gang on a real scheduler: kube-scheduler with the Workload API (GenericWorkload) and
`lws manager` (schedulerProvider: kubernetes) as a separate process, webhooks included.

Three fake nodes with one CPU each, pods asking for 600m: room for exactly three pods. A group of
four with `spec.scheduling` (one gang per replica) must stay entirely unscheduled; the same group
without it gets three pods placed; a fourth node lets the whole gang in at once.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS
from tests.support import clusters
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
CONFIG = """apiVersion: config.lws.x-k8s.io/v1
kind: Configuration
gangSchedulingManagement:
  schedulerProvider: kubernetes
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
async def gang_env(gang_full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    kube = clusters.client_for(gang_full_cluster)
    await install_crds(kube)
    await kube.close()
    config = gang_full_cluster.workdir / "lws-config.yaml"
    config.write_text(CONFIG)
    manager = ManagerProcess(gang_full_cluster, name="lws-manager-gang", config=config)
    await manager.start()
    api = new_client(
        ClientOptions(kubeconfig=str(gang_full_cluster.kubeconfig), field_manager="lws-e2e-tests")
    )
    try:
        yield api
    finally:
        await api.close()
        await manager.stop()


def _lws(ns: str, gang: bool) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns).replicas(1).size(4).no_leader_template().worker_requests({"cpu": "600m"})
    )
    return (builder.scheduling({}) if gang else builder).obj()


async def _pods(api: KubeClient, ns: str) -> list[Obj]:
    return await api.list(PODS, ns, label_selector=c.LABEL_SET_NAME)


def _scheduled(pods: list[Obj]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


async def _all_pods_created(api: KubeClient, ns: str) -> list[Obj]:
    async def check() -> list[Obj]:
        pods = await _pods(api, ns)
        assert len(pods) == 4, [p["metadata"]["name"] for p in pods]
        return pods

    result: list[Obj] = await eventually(check)
    return result


async def _scheduler_saw_all(api: KubeClient, ns: str) -> None:
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
        assert verdicts == ["False"] * 4, verdicts
        return True

    await eventually(check)


async def test_a_gang_is_all_or_nothing_on_kube_scheduler(
    gang_env: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    api = gang_env
    kube = clusters.client_for(gang_full_cluster)
    try:
        gang_ns = await clusters.fresh_namespace(kube, request)
        plain_ns = await clusters.fresh_namespace(kube, request)
    finally:
        await kube.close()

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

    await eventually(plain_gone)

    # 3. A fourth node: the whole gang is placed together.
    await api.create(NODES, _node(3).manifest())

    async def all_placed() -> bool:
        pods = await _pods(api, gang_ns)
        assert _scheduled(pods) == 4, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]
        return True

    await eventually(all_placed, timeout=LONG_TIMEOUT)


async def _none_scheduled(api: KubeClient, ns: str) -> bool:
    return _scheduled(await _pods(api, ns)) == 0
