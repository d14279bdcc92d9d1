"""Our webhook server wired into the session's real kube-apiserver.

The server listens on 127.0.0.1 with a certificate for that IP; URL-based webhook configurations
point the API server at it. They carry a unique name and a namespaceSelector on a per-session
label, so only namespaces of these tests are affected and other suites sharing the cluster never
hit this short-lived server.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NAMESPACES
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.configurations import render_for_url
from leaderworkerset.webhooks.server import WebhookServer
from tests.support.wait import eventually

SESSION = uuid.uuid4().hex[:8]
SELECTOR_LABEL = "webhook-it.leaderworkerset.test/session"
REFS = {"MutatingWebhookConfiguration": certs.MUTATING_CONFIGURATIONS}
REFS["ValidatingWebhookConfiguration"] = certs.VALIDATING_CONFIGURATIONS


@pytest.fixture(scope="session")
async def webhook_client(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def webhook_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[WebhookServer, bytes]]:
    cert_dir: Path = tmp_path_factory.mktemp("webhook-certs")
    config = certs.CertConfig(namespace="lws-system", ip_addresses=("127.0.0.1",))
    artifacts = certissue.generate(config, certs.utc_now())
    certs.write_cert_dir(cert_dir, artifacts)
    server = WebhookServer(cert_dir, host="127.0.0.1", port=0)
    await server.start()
    yield server, artifacts.ca_cert
    await server.stop()


def _scoped(configuration: dict[str, Any], scope: str) -> dict[str, Any]:
    configuration["metadata"]["name"] = f"{configuration['metadata']['name']}-it-{scope}"
    for webhook in configuration["webhooks"]:
        webhook["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: scope}}
        webhook["timeoutSeconds"] = 10
    return configuration


@pytest.fixture(scope="session")
async def lws_crds(kube: AsyncClient) -> list[str]:
    return await install_crds(kube)


@pytest.fixture(scope="session")
async def registered_webhooks(
    lws_crds: list[str], webhook_client: KubeClient, webhook_server: tuple[WebhookServer, bytes]
) -> AsyncIterator[str]:
    """The configurations pointing at this server; yields the label value that selects them.

    Each package that imports these fixtures (the chaos suite does) gets its own server, so each
    registration carries its own scope: two never share a name or a namespace."""
    server, ca = webhook_server
    scope = f"{SESSION}-{uuid.uuid4().hex[:6]}"
    configurations = [_scoped(cfg, scope) for cfg in render_for_url("127.0.0.1", server.port, ca)]
    for configuration in configurations:
        await webhook_client.create(REFS[configuration["kind"]], configuration)
    yield scope
    for configuration in configurations:
        with contextlib.suppress(ApiStatusError):
            await webhook_client.delete(REFS[configuration["kind"]], None, configuration["metadata"]["name"])


@pytest.fixture
async def webhook_namespace(webhook_client: KubeClient, registered_webhooks: str, namespace: str) -> str:
    """A fresh namespace our webhooks apply to; waits until the API server calls them there."""
    await webhook_client.merge_patch(
        NAMESPACES, None, namespace, {"metadata": {"labels": {SELECTOR_LABEL: registered_webhooks}}}
    )

    async def active() -> bool:
        # A name only our DNS-1035 rule rejects (the API server accepts it for custom resources).
        probe = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "metadata": {"name": "2probe", "namespace": namespace},
            "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "c"}]}}}},
        }
        path = LEADERWORKERSETS.collection_path(namespace)
        try:
            await webhook_client.request("POST", path, body=probe, params={"dryRun": "All"})
        except ApiStatusError as err:
            return c.WEBHOOK_NAME_VALIDATE_LWS in err.status.message
        return False

    await eventually(active, message="webhooks not called by the API server")
    return namespace
