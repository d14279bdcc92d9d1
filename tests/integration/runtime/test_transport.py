"""The aiohttp transport against a real kube-apiserver, with each kind of credential lightkube's loader
gives: the kubeconfig's client certificate, a bearer token, a token file and an exec plugin; the last two
are asked again after a 401 (the account's old tokens revoked), so rotated credentials are picked up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import ResourceRef
from tests.support import serviceaccount
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

SERVICE_ACCOUNTS = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts")
SELF_SUBJECT_REVIEWS = ResourceRef(
    "authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", namespaced=False
)
ACCOUNT = "transport-test"


async def whoami(client: KubeClient) -> str:
    review = await client.create(
        SELF_SUBJECT_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    return str(review["status"]["userInfo"]["username"])


async def new_account(client: KubeClient, namespace: str) -> None:
    """(Re)create the account: deleting it revokes every token issued for it."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": namespace},
    }
    await client.create(SERVICE_ACCOUNTS, account)


@pytest.fixture
async def as_account(
    client: KubeClient, namespace: str, apiserver_cluster: LocalCluster, tmp_path: Path
) -> AsyncIterator[Any]:
    await new_account(client, namespace)
    opened: list[KubeClient] = []

    def open_with(user: dict[str, Any]) -> KubeClient:
        path = serviceaccount.kubeconfig_with_user(apiserver_cluster, user, tmp_path / "kubeconfig")
        opened.append(new_client(ClientOptions(kubeconfig=str(path))))
        return opened[-1]

    yield open_with
    for other in opened:
        await other.close()


def account_token(cluster: LocalCluster, namespace: str) -> str:
    return serviceaccount.token(cluster, ACCOUNT, namespace)


async def rotate(
    client: KubeClient, cluster: LocalCluster, namespace: str, token_file: Path, old: KubeClient
) -> None:
    """Revoke the account's tokens and put a valid new one where the credential is read from. The
    server caches token reviews for a few seconds: wait until `old` (a client on the old token) is
    refused."""
    await client.delete(SERVICE_ACCOUNTS, namespace, ACCOUNT, propagation=None)
    await new_account(client, namespace)
    await asyncio.to_thread(token_file.write_text, account_token(cluster, namespace))
    await eventually(lambda: refused(old))


async def refused(client: KubeClient) -> bool:
    try:
        await whoami(client)
    except ApiStatusError as err:
        if err.code != 401:
            raise
        return True
    return False


async def test_client_certificate_from_kubeconfig(client: KubeClient) -> None:
    assert client.config.user is not None
    assert client.config.user.client_cert_data, "the local cluster's kubeconfig carries a client certificate"
    assert await whoami(client) == "kubernetes-admin"


async def test_bearer_token(as_account: Any, apiserver_cluster: LocalCluster, namespace: str) -> None:
    token_client: KubeClient = as_account({"token": account_token(apiserver_cluster, namespace)})
    assert await whoami(token_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    assert token_client.transport.credentials.refreshes == 0


async def test_token_file_is_read_again_after_401(
    as_account: Any, client: KubeClient, apiserver_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(account_token(apiserver_cluster, namespace))
    old = as_account({"token": token_file.read_text()})
    file_client: KubeClient = as_account({"tokenFile": str(token_file)})
    assert await whoami(file_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    await rotate(client, apiserver_cluster, namespace, token_file, old)
    assert await whoami(file_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    assert file_client.transport.credentials.refreshes == 1


async def test_exec_plugin_runs_again_after_401(
    as_account: Any, client: KubeClient, apiserver_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    token_file, runs, plugin = tmp_path / "token", tmp_path / "runs", tmp_path / "plugin.py"
    token_file.write_text(account_token(apiserver_cluster, namespace))
    old = as_account({"token": token_file.read_text()})
    exec_client: KubeClient = as_account(serviceaccount.exec_user(plugin, token_file, runs))
    assert await whoami(exec_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    assert await whoami(exec_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    assert runs.read_text() == "1", "the plugin's token is kept while the server accepts it"
    await rotate(client, apiserver_cluster, namespace, token_file, old)
    assert await whoami(exec_client) == f"system:serviceaccount:{namespace}:{ACCOUNT}"
    assert runs.read_text() == "2"


async def test_revoked_static_token_fails_with_401(
    as_account: Any, client: KubeClient, apiserver_cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    token_client: KubeClient = as_account({"token": account_token(apiserver_cluster, namespace)})
    assert await whoami(token_client)
    await rotate(client, apiserver_cluster, namespace, tmp_path / "unused", token_client)
    assert token_client.transport.credentials.refreshes >= 1, "asked, but a static token stays the same"
