"""KubeClient writes against a real kube-apiserver: SSA, patches, status subresource, delete preconditions."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.crd.install import install_crds
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError, is_conflict, is_not_found
from leaderworkerset.runtime.resources import LEADERWORKERSETS, ResourceRef

pytestmark = pytest.mark.cluster

CONFIGMAPS = ResourceRef("", "v1", "ConfigMap", "configmaps")
CRDS = ResourceRef(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


def configmap(namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": namespace},
        "data": data,
    }


async def test_server_side_apply_owns_and_forces(client: KubeClient, namespace: str) -> None:
    first = await client.apply(CONFIGMAPS, configmap(namespace, {"a": "1"}))
    again = await client.apply(CONFIGMAPS, configmap(namespace, {"a": "1"}))
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], "no-op apply"
    managers = {f["manager"] for f in again["metadata"]["managedFields"]}
    assert managers == {"lws"}

    # Another manager takes the field; our forced apply takes it back instead of failing with 409.
    await client.request(
        "PATCH", CONFIGMAPS.object_path(namespace, "cm"), body=configmap(namespace, {"a": "2"}),
        content_type="application/apply-patch+yaml", params={"fieldManager": "someone-else", "force": "true"},
    )  # fmt: skip
    back = await client.apply(CONFIGMAPS, configmap(namespace, {"a": "1"}))
    assert back["data"] == {"a": "1"}


async def test_merge_and_json_patch(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIGMAPS, configmap(namespace, {"a": "1", "b": "2"}))
    merged = await client.merge_patch(CONFIGMAPS, namespace, "cm", {"data": {"a": None, "c": "3"}})
    assert merged["data"] == {"b": "2", "c": "3"}
    patched = await client.json_patch(
        CONFIGMAPS, namespace, "cm", [{"op": "replace", "path": "/data/b", "value": "9"}]
    )
    assert patched["data"] == {"b": "9", "c": "3"}


async def test_delete_preconditions(client: KubeClient, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap(namespace, {}))
    with pytest.raises(ApiStatusError) as stale:
        await client.delete(CONFIGMAPS, namespace, "cm", uid="not-the-uid")
    assert is_conflict(stale.value)
    await client.delete(CONFIGMAPS, namespace, "cm", uid=created["metadata"]["uid"])
    with pytest.raises(ApiStatusError) as gone:
        await client.get(CONFIGMAPS, namespace, "cm")
    assert is_not_found(gone.value)


async def test_status_subresource_apply_on_our_crd(
    client: KubeClient, kube: AsyncClient, namespace: str
) -> None:
    await install_crds(kube)  # the project's CRDs, as the controllers' tests install them
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "demo", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 1,
                "workerTemplate": {
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                },
            },
        },
    }
    await client.create(LEADERWORKERSETS, lws)
    status = {"replicas": 1, "readyReplicas": 0, "updatedReplicas": 1, "hpaPodSelector": "x=y"}
    applied = await client.apply_status(
        LEADERWORKERSETS, {"apiVersion": lws["apiVersion"], "kind": lws["kind"], "metadata": lws["metadata"],
                           "status": status},
    )  # fmt: skip
    assert applied["status"]["hpaPodSelector"] == "x=y"
    assert applied["spec"]["replicas"] == 1, "status apply leaves the spec alone"
