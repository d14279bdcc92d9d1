"""The pod reaper confirms a pod's deletion only for the very object that was deleted: a same-name
replacement is never touched (kwok's by-name delete did touch it and made groups restart twice)."""

from __future__ import annotations

import pytest
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Pod

from leaderworkerset.devcluster import reaper
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient

pytestmark = pytest.mark.cluster


def _bound_pod(name: str) -> Pod:
    # Bound to a node, so deletion waits for a kubelet (here: the reaper) instead of being immediate.
    return Pod.from_dict(
        {
            "metadata": {"name": name},
            "spec": {"nodeName": "node-that-never-answers", "containers": [{"name": "main", "image": "img"}]},
        }
    )


async def test_finalising_a_terminating_pod_removes_it(
    kube: AsyncClient, apiserver_cluster: LocalCluster, namespace: str
) -> None:
    await kube.create(_bound_pod("doomed"), namespace=namespace)
    await kube.delete(Pod, "doomed", namespace=namespace)
    terminating = await kube.get(Pod, "doomed", namespace=namespace)
    assert terminating.metadata is not None
    assert terminating.metadata.deletionTimestamp is not None

    reaper.finalise(RestClient.from_kubeconfig(apiserver_cluster.kubeconfig), terminating.to_dict())

    assert [p async for p in kube.list(Pod, namespace=namespace)] == []


async def test_a_stale_deletion_never_removes_a_same_name_replacement(
    kube: AsyncClient, apiserver_cluster: LocalCluster, namespace: str
) -> None:
    await kube.create(_bound_pod("worker-1"), namespace=namespace)
    await kube.delete(Pod, "worker-1", namespace=namespace)
    old = (await kube.get(Pod, "worker-1", namespace=namespace)).to_dict()
    client = RestClient.from_kubeconfig(apiserver_cluster.kubeconfig)
    reaper.finalise(client, old)
    replacement = await kube.create(_bound_pod("worker-1"), namespace=namespace)

    reaper.finalise(client, old)  # the duplicate event for the old pod arrives late

    survivor = await kube.get(Pod, "worker-1", namespace=namespace)
    assert survivor.metadata is not None
    assert replacement.metadata is not None
    assert survivor.metadata.uid == replacement.metadata.uid
    assert survivor.metadata.deletionTimestamp is None
