"""`serve`: certificates are in place before the server starts, and stop ends everything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.webhooks import certs
from leaderworkerset.webhooks.runner import WebhookRunConfig, serve

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
