"""The apiserver shape is a real kube-apiserver: CRDs, CEL validation, admission."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

RULE_MESSAGE = "minReplicas must not exceed maxReplicas"

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.smoke.lws.test"},
    "spec": {
        "group": "smoke.lws.test",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "minReplicas": {"type": "integer"},
                                    "maxReplicas": {"type": "integer"},
                                },
                                "x-kubernetes-validations": [
                                    {"rule": "self.minReplicas <= self.maxReplicas", "message": RULE_MESSAGE}
                                ],
                            }
                        },
                    }
                },
            }
        ],
    },
}

Widget = create_namespaced_resource("smoke.lws.test", "v1", "Widget", "widgets")


async def _established(kube: AsyncClient) -> bool:
    crd = await kube.get(CustomResourceDefinition, "widgets.smoke.lws.test")
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


async def test_a_crd_with_a_cel_rule_rejects_a_bad_object_with_the_rules_message(
    kube: AsyncClient, namespace: str
) -> None:
    await kube.apply(CustomResourceDefinition.from_dict(WIDGET_CRD), force=True)
    await eventually(lambda: _established(kube))

    good = Widget.from_dict({"metadata": {"name": "good"}, "spec": {"minReplicas": 1, "maxReplicas": 3}})
    # A freshly established CRD can take a moment to be served; retry only "not found".
    await eventually(lambda: _create_ignoring_not_found(kube, good, namespace))

    bad = Widget.from_dict({"metadata": {"name": "bad"}, "spec": {"minReplicas": 5, "maxReplicas": 3}})
    with pytest.raises(ApiError) as rejected:
        await kube.create(bad, namespace=namespace)

    assert rejected.value.status.code == 422
    assert RULE_MESSAGE in (rejected.value.status.message or "")
    assert "spec" in (rejected.value.status.message or "")


async def _create_ignoring_not_found(kube: AsyncClient, obj: object, namespace: str) -> bool:
    try:
        await kube.create(obj, namespace=namespace)  # type: ignore[call-overload]
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True


def test_rest_client_leaves_no_key_on_disk(
    apiserver_cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's key is written for `ssl` and removed once the context holds it: a suite
    that makes a thousand clients must not leave a thousand private keys in /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    client = RestClient.from_kubeconfig(apiserver_cluster.kubeconfig)
    assert client.get("/version") is not None  # the context works without the files
    assert list(tmp_path.iterdir()) == []
