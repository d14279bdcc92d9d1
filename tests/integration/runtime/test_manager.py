"""The manager against a real kube-apiserver: leader-gated controllers, probes, secured metrics, stop."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.controller import Controller, Result
from leaderworkerset.runtime.manager import Manager, ManagerOptions
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import LEASES, ResourceRef
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

CONFIGMAPS = ResourceRef("", "v1", "ConfigMap", "configmaps")
SERVICE_ACCOUNTS = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts")
RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = ResourceRef(RBAC, "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDINGS = ResourceRef(RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False)
TOKEN_REQUEST = {
    "apiVersion": "authentication.k8s.io/v1",
    "kind": "TokenRequest",
    "spec": {"expirationSeconds": 600},
}


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def options(namespace: str) -> ManagerOptions:
    return ManagerOptions(
        health_probe_bind_address="127.0.0.1:0",
        metrics_bind_address="127.0.0.1:0",
        election_namespace=namespace,
        election_id="lws-manager-test",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.2,
        handle_signals=False,
        freeze_gc_after_sync=False,
    )


@pytest.fixture
async def running(client: KubeClient, namespace: str) -> AsyncIterator[tuple[Manager, list[ObjectKey]]]:
    manager = Manager(client, options(namespace))
    seen: list[ObjectKey] = []

    async def reconcile(key: ObjectKey) -> Result | None:
        seen.append(key)
        return None

    informer = manager.cache.informer(CONFIGMAPS, DictCodec(), namespace=namespace)
    controller = Controller("configmap", reconcile, metrics=manager.metrics)
    controller.watch(informer)
    manager.add_controller(controller)
    task = asyncio.create_task(manager.run())
    await asyncio.wait_for(manager.servers_started.wait(), 10)
    yield manager, seen
    manager.stop()
    await asyncio.wait_for(task, 30)


async def bearer_token(client: KubeClient, namespace: str, name: str) -> str:
    await client.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                           "metadata": {"name": name, "namespace": namespace}})  # fmt: skip
    path = SERVICE_ACCOUNTS.object_path(namespace, name, "token")
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    review = await client.request("POST", path, body=request)
    return str(review["status"]["token"])


async def grant_metrics_reader(client: KubeClient, namespace: str, sa: str) -> None:
    role = f"{namespace}-metrics-reader"
    await client.create(CLUSTER_ROLES, {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": role},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    })  # fmt: skip
    await client.create(CLUSTER_ROLE_BINDINGS, {
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
    })  # fmt: skip


async def test_leader_runs_controller_serves_probes_and_releases(
    client: KubeClient, namespace: str, running: tuple[Manager, list[ObjectKey]]
) -> None:
    manager, seen = running
    await eventually(lambda: manager.elector is not None and manager.elector.is_leader)
    await client.create(CONFIGMAPS, configmap("hello", namespace))
    await eventually(lambda: ObjectKey(namespace, "hello") in seen)

    async with aiohttp.ClientSession() as http:
        port = manager.bound_ports["probes"]
        async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
            assert response.status == 200
        async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200


async def test_metrics_need_a_token_with_rbac(
    client: KubeClient, namespace: str, running: tuple[Manager, list[ObjectKey]]
) -> None:
    manager, _ = running
    url = f"https://127.0.0.1:{manager.bound_ports['metrics']}/metrics"
    token = await bearer_token(client, namespace, "scraper")
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the manager's self-signed serving certificate

    async def status(headers: dict[str, str]) -> tuple[int, str]:
        async with aiohttp.ClientSession() as http, http.get(url, headers=headers, ssl=insecure) as response:
            return response.status, await response.text()

    assert (await status({}))[0] == 401
    assert (await status({"Authorization": "Bearer not-a-token"}))[0] == 401
    assert (await status({"Authorization": f"Bearer {token}"}))[0] == 403
    await grant_metrics_reader(client, namespace, "scraper")

    async def allowed() -> str | None:
        code, body = await status({"Authorization": f"Bearer {token}"})
        return body if code == 200 else None

    body = await eventually(allowed, timeout=30)  # denied decisions are cached for 10 s
    assert "controller_runtime_max_concurrent_reconciles" in body
    assert "leader_election_master_status" in body


async def test_graceful_stop_releases_lease(client: KubeClient, namespace: str) -> None:
    manager = Manager(client, options(namespace))
    task = asyncio.create_task(manager.run())
    await eventually(lambda: manager.elector is not None and manager.elector.is_leader)
    manager.stop()
    await asyncio.wait_for(task, 30)
    lease = await client.get(LEASES, namespace, "lws-manager-test")
    assert not lease["spec"].get("holderIdentity")
