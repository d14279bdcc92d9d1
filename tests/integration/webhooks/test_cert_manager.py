"""CertManager against a real kube-apiserver: the Secret, the cert dir and caBundle injection."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime import childjob
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.webhooks import certs
from leaderworkerset.webhooks.configurations import render_for_url
from tests.integration.webhooks.conftest import REFS, SESSION

pytestmark = pytest.mark.cluster


@pytest.fixture
async def inert_configurations(webhook_client: KubeClient) -> AsyncIterator[tuple[str, ...]]:
    """Webhook configurations that select no namespace, so they never intercept anything."""
    names = []
    for configuration in render_for_url("127.0.0.1", 1):
        configuration["metadata"]["name"] = f"{configuration['metadata']['name']}-certs-{SESSION}"
        for webhook in configuration["webhooks"]:
            webhook["namespaceSelector"] = {"matchLabels": {"never.leaderworkerset.test/selected": "true"}}
        await webhook_client.create(REFS[configuration["kind"]], configuration)
        names.append((configuration["kind"], configuration["metadata"]["name"]))
    yield tuple(name for _, name in names)
    for kind, name in names:
        with contextlib.suppress(ApiStatusError):
            await webhook_client.delete(REFS[kind], None, name)


def _bundles(configuration: dict[str, Any]) -> set[str]:
    return {webhook["clientConfig"].get("caBundle", "") for webhook in configuration["webhooks"]}


async def test_certificates_are_stored_written_and_injected(
    webhook_client: KubeClient,
    namespace: str,
    inert_configurations: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [certs.utc_now()]
    issued: list[dict[str, Any]] = []
    ask_child = childjob.call_async

    async def counted(module: str, payload: Any, timeout: float = childjob.TIMEOUT_SECONDS) -> Any:
        issued.append(payload)
        return await ask_child(module, payload, timeout)

    monkeypatch.setattr(childjob, "call_async", counted)
    config = certs.CertConfig(
        namespace=namespace,
        secret_name="webhook-cert",
        cert_dir=tmp_path,
        configuration_names=inert_configurations,
    )
    manager = certs.CertManager(webhook_client, config, clock=lambda: now[0])
    first = await manager.reconcile()

    secret = await webhook_client.get(certs.SECRETS, namespace, "webhook-cert")
    assert certs.CertArtifacts.from_secret_data(secret["data"]) == first
    assert (tmp_path / c.TLS_CERT_FILE).read_bytes() == first.cert
    want_bundle = base64.b64encode(first.ca_cert).decode()
    for ref, name in zip(
        (certs.MUTATING_CONFIGURATIONS, certs.VALIDATING_CONFIGURATIONS), inert_configurations, strict=True
    ):
        assert _bundles(await webhook_client.get(ref, None, name)) == {want_bundle}

    # Nothing to do on a second pass: the Secret is not rewritten, and the issuer's verdict on the
    # pair it made still holds, so no child is asked.
    assert len(issued) == 1
    assert await manager.reconcile() == first
    again = await webhook_client.get(certs.SECRETS, namespace, "webhook-cert")
    assert again["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
    assert len(issued) == 1

    # Close to expiry, the serving pair is renewed under the same CA.
    now[0] += dt.timedelta(days=300)
    renewed = await manager.reconcile()
    assert len(issued) == 2
    assert (renewed.ca_cert, renewed.cert != first.cert) == (first.ca_cert, True)
    assert (tmp_path / c.TLS_CERT_FILE).read_bytes() == renewed.cert
