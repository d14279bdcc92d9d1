"""`serve`: certificates are in place before the server starts, and stop ends everything."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from leaderworkerset.webhooks import certs
from leaderworkerset.webhooks.runner import WebhookRunConfig, local_run_config, serve
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster


async def test_serve_prepares_certificates_then_stops(
    webhook_client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    config = WebhookRunConfig(host="127.0.0.1", port=0, cert_dir=tmp_path, namespace=namespace)
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(webhook_client, config, stop, ready))
    await asyncio.wait_for(ready.wait(), 30)
    assert (tmp_path / c.TLS_CERT_FILE).exists()
    secret = await webhook_client.get(certs.SECRETS, namespace, c.DEFAULT_WEBHOOK_SECRET_NAME)
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    stop.set()
    await asyncio.wait_for(task, 30)


async def test_local_serve_registers_url_configurations(
    webhook_client: KubeClient, lws_crds: list[str], namespace: str, tmp_path: Path
) -> None:
    config = local_run_config(tmp_path, port=0, namespace=namespace)
    stop = asyncio.Event()
    task = asyncio.create_task(serve(webhook_client, config, stop))
    try:

        async def defaulted() -> bool:
            body = {
                "apiVersion": c.LWS_API_VERSION,
                "kind": c.LWS_KIND,
                "metadata": {"name": "local", "namespace": namespace},
                "spec": {
                    "leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w"}]}}}
                },
            }
            path = LEADERWORKERSETS.collection_path(namespace)
            created = await webhook_client.request("POST", path, body=body, params={"dryRun": "All"})
            return created["spec"].get("groupIdentity") == c.GROUP_IDENTITY_ORDINAL

        await eventually(defaulted, message="local webhook configurations not in effect")
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        for ref, name in (
            (certs.MUTATING_CONFIGURATIONS, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
            (certs.VALIDATING_CONFIGURATIONS, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
        ):
            with contextlib.suppress(ApiStatusError):
                await webhook_client.delete(ref, None, name)
