"""The full local cluster behaves like Kubernetes: real controllers, real
scheduler, kwok nodes that run pods (on paper)."""

from __future__ import annotations

import os
import signal

import pytest
from lightkube import AsyncClient
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import Node, Pod

from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.devcluster.nodes import TOPOLOGY_ZONE
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]


def _container(image: str = "registry.example/app:v1") -> dict[str, object]:
    return {"name": "main", "image": image, "resources": {"requests": {"cpu": "100m"}}}


def _statefulset(name: str, replicas: int) -> StatefulSet:
    labels = {"app": name}
    return StatefulSet.from_dict(
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "serviceName": name,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container()]}},
            },
        }
    )


def _ready(pod: Pod) -> bool:
    conditions = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


async def _pods(kube: AsyncClient, ns: str, app: str) -> list[Pod]:
    return [p async for p in kube.list(Pod, namespace=ns, labels={"app": app})]


async def test_statefulset_pods_become_ready_on_fake_nodes(
    full_kube: AsyncClient, full_namespace: str
) -> None:
    await full_kube.create(_statefulset("web", 3), namespace=full_namespace)

    async def three_ready_on_nodes() -> bool:
        pods = await _pods(full_kube, full_namespace, "web")
        return len(pods) == 3 and all(_ready(p) and p.spec and p.spec.nodeName for p in pods)

    await eventually(three_ready_on_nodes)
    node_names = {n.metadata.name async for n in full_kube.list(Node) if n.metadata}
    pods = await _pods(full_kube, full_namespace, "web")
    assert {p.metadata.name for p in pods if p.metadata} == {"web-0", "web-1", "web-2"}
    assert {p.spec.nodeName for p in pods if p.spec} <= node_names


async def test_deleting_a_statefulset_garbage_collects_its_pods(
    full_kube: AsyncClient, full_namespace: str
) -> None:
    await full_kube.create(_statefulset("gc", 2), namespace=full_namespace)
    await eventually(lambda: _count(full_kube, full_namespace, "gc", 2))

    await full_kube.delete(StatefulSet, "gc", namespace=full_namespace)

    await eventually(lambda: _count(full_kube, full_namespace, "gc", 0))


async def _count(kube: AsyncClient, ns: str, app: str, want: int) -> bool:
    return len(await _pods(kube, ns, app)) == want


async def test_required_pod_affinity_colocates_pods_in_one_zone(
    full_kube: AsyncClient, full_namespace: str
) -> None:
    # An anchor pod pinned to one node; followers must share its zone.
    anchor_node = "kwok-node-1"
    await full_kube.create(
        Pod.from_dict(
            {
                "metadata": {"name": "anchor", "labels": {"app": "anchor"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": anchor_node},
                    "containers": [_container()],
                },
            }
        ),
        namespace=full_namespace,
    )
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "anchor"}}, "topologyKey": TOPOLOGY_ZONE}
            ]
        }
    }
    for i in range(4):
        await full_kube.create(
            Pod.from_dict(
                {
                    "metadata": {"name": f"follower-{i}", "labels": {"app": "follower"}},
                    "spec": {"affinity": affinity, "containers": [_container()]},
                }
            ),
            namespace=full_namespace,
        )

    async def followers_scheduled() -> list[Pod]:
        pods = await _pods(full_kube, full_namespace, "follower")
        return pods if len(pods) == 4 and all(p.spec and p.spec.nodeName for p in pods) else []

    followers = await eventually(followers_scheduled)
    zones = {
        n.metadata.name: n.metadata.labels[TOPOLOGY_ZONE]
        async for n in full_kube.list(Node)
        if n.metadata and n.metadata.labels
    }
    assert {zones[p.spec.nodeName] for p in followers if p.spec and p.spec.nodeName} == {zones[anchor_node]}
    # The cluster has more than one zone, so co-location is the scheduler's doing, not chance.
    assert len(set(zones.values())) > 1


async def test_deployment_rolls_out_a_new_template(full_kube: AsyncClient, full_namespace: str) -> None:
    labels = {"app": "api"}
    deployment = Deployment.from_dict(
        {
            "metadata": {"name": "api"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container("img:v1")]}},
            },
        }
    )
    await full_kube.create(deployment, namespace=full_namespace)
    await eventually(lambda: _deployment_done(full_kube, full_namespace, "img:v1"))

    await full_kube.patch(
        Deployment,
        "api",
        namespace=full_namespace,
        obj={"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "img:v2"}]}}}},
    )

    await eventually(lambda: _deployment_done(full_kube, full_namespace, "img:v2"))


async def _deployment_done(kube: AsyncClient, ns: str, image: str) -> bool:
    dep = await kube.get(Deployment, "api", namespace=ns)
    status = dep.status
    if not (dep.metadata and status and status.observedGeneration == dep.metadata.generation):
        return False
    if (status.updatedReplicas, status.readyReplicas, status.replicas) != (3, 3, 3):
        return False
    pods = await _pods(kube, ns, "api")
    return len(pods) == 3 and all(p.spec and p.spec.containers[0].image == image and _ready(p) for p in pods)


async def test_simulated_container_restart_is_visible_in_pod_status(
    full_kube: AsyncClient, full_cluster: LocalCluster, full_namespace: str
) -> None:
    await full_kube.create(_statefulset("crashy", 1), namespace=full_namespace)
    await eventually(lambda: _count_ready(full_kube, full_namespace, "crashy", 1))

    chaos.restart_container(RestClient.from_kubeconfig(full_cluster.kubeconfig), full_namespace, "crashy-0")

    async def restarted_once() -> bool:
        pod = await full_kube.get(Pod, "crashy-0", namespace=full_namespace)
        statuses = (pod.status.containerStatuses if pod.status else None) or []
        return [s.restartCount for s in statuses] == [1]

    await eventually(restarted_once)


async def test_simulated_pod_failure_makes_the_statefulset_replace_it(
    full_kube: AsyncClient, full_cluster: LocalCluster, full_namespace: str
) -> None:
    await full_kube.create(_statefulset("fragile", 1), namespace=full_namespace)
    await eventually(lambda: _count_ready(full_kube, full_namespace, "fragile", 1))
    original = await full_kube.get(Pod, "fragile-0", namespace=full_namespace)

    chaos.fail_pod(RestClient.from_kubeconfig(full_cluster.kubeconfig), full_namespace, "fragile-0")

    async def replaced_and_ready() -> bool:
        pods = {p.metadata.name: p for p in await _pods(full_kube, full_namespace, "fragile") if p.metadata}
        pod = pods.get("fragile-0")  # absent between the failed pod's removal and its replacement
        return bool(
            pod is not None
            and pod.metadata
            and original.metadata
            and pod.metadata.uid != original.metadata.uid
            and _ready(pod)
        )

    await eventually(replaced_and_ready)


async def _count_ready(kube: AsyncClient, ns: str, app: str, want: int) -> bool:
    return sum(1 for p in await _pods(kube, ns, app) if _ready(p)) == want


async def test_a_scheduler_that_exits_is_restarted_and_schedules_again(
    full_kube: AsyncClient, full_cluster: LocalCluster, full_namespace: str
) -> None:
    """kube-scheduler exits on purpose when its cache looks corrupted (an API server restart can
    cause it); the cluster restarts it as a kubelet would, so pods are scheduled again."""
    before = full_cluster.restarts.get("kube-scheduler", 0)
    pid = full_cluster.state.pids["kube-scheduler"]
    os.kill(pid, signal.SIGKILL)

    async def restarted() -> bool:
        assert full_cluster.restarts.get("kube-scheduler", 0) == before + 1, full_cluster.restarts
        assert full_cluster.state.pids["kube-scheduler"] != pid
        return True

    await eventually(restarted)
    await full_kube.create(_statefulset("after-restart", 1), namespace=full_namespace)

    async def scheduled() -> bool:
        pods = await _pods(full_kube, full_namespace, "after-restart")
        return len(pods) == 1 and all(_ready(p) and p.spec and p.spec.nodeName for p in pods)

    await eventually(scheduled)
