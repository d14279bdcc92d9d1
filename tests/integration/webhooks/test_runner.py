"""`serve`: certificates are in place before the server starts, and stop ends everything."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import free_port
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.runner import (
    WebhookRunConfig,
    install_local_configurations,
    local_run_config,
    serve,
)
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


def configured_hosts(configurations: list[dict[str, Any]]) -> set[str]:
    """The host:port every webhook of the configurations calls."""
    return {
        str(webhook["clientConfig"]["url"]).split("/")[2]
        for configuration in configurations
        for webhook in configuration.get("webhooks") or []
    }


async def our_configurations(client: KubeClient) -> list[dict[str, Any]]:
    return [
        await client.get(certs.MUTATING_CONFIGURATIONS, None, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
        await client.get(certs.VALIDATING_CONFIGURATIONS, None, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
    ]


async def remove_our_configurations(client: KubeClient) -> None:
    """They apply to every namespace: left pointing at a stopped server they would refuse LWS writes."""
    for ref, name in (
        (certs.MUTATING_CONFIGURATIONS, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
        (certs.VALIDATING_CONFIGURATIONS, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
    ):
        with contextlib.suppress(ApiStatusError):
            await client.delete(ref, None, name)


async def test_local_serve_reports_serving_only_once_the_configurations_name_it(
    webhook_client: KubeClient, lws_crds: list[str], namespace: str, tmp_path: Path
) -> None:
    """A replacement manager must not look ready while the API server still calls its predecessor:
    ``serving`` is set after the configurations name the new server, and admission works at once."""
    port = free_port()
    config = local_run_config(tmp_path, port=port, namespace=namespace)
    other_ca = certissue.generate(config.cert_config(), certs.utc_now()).ca_cert
    await install_local_configurations(webhook_client, free_port(), other_ca)  # a dead predecessor
    stop, serving = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(webhook_client, config, stop, serving=serving))
    try:
        await asyncio.wait_for(serving.wait(), 60)
        assert configured_hosts(await our_configurations(webhook_client)) == {f"127.0.0.1:{port}"}
        body = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "metadata": {"name": "at-once", "namespace": namespace},
            "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w"}]}}}},
        }
        path = LEADERWORKERSETS.collection_path(namespace)
        created = await webhook_client.request("POST", path, body=body, params={"dryRun": "All"})
        assert created["spec"].get("groupIdentity") == c.GROUP_IDENTITY_ORDINAL
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await remove_our_configurations(webhook_client)


async def test_local_serve_can_name_a_balancer_port_instead_of_its_own(
    webhook_client: KubeClient, lws_crds: list[str], namespace: str, tmp_path: Path
) -> None:
    balancer = free_port()
    config = replace(local_run_config(tmp_path, port=free_port(), namespace=namespace), url_port=balancer)
    stop, serving = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(webhook_client, config, stop, serving=serving))
    try:
        await asyncio.wait_for(serving.wait(), 60)
        assert configured_hosts(await our_configurations(webhook_client)) == {f"127.0.0.1:{balancer}"}
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await remove_our_configurations(webhook_client)
