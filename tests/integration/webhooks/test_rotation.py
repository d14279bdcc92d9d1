"""Certificate rotation under load: no admission request fails.

The CertManager keeps the serving pair in a Secret and the cert dir, and the server reloads the
files it serves (polling every second, as in production). Here the real kube-apiserver keeps
creating pods through our pod webhooks (4 in flight) while the manager renews the certificate
because its renewal window says it is about to expire: first the serving certificate under the same
CA, then the CA itself (which also rewrites the caBundles). The load runs until enough creates have
been admitted after the new certificate is served; every create must succeed and be mutated.

A CA rotation used to fail 58 of the 200 creates that followed it: the caBundle switched to the
new CA while the old certificate was still served. The manager now adds the new CA to the bundle
before the new pair is written and drops the old CA on its next pass.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import NAMESPACES, PODS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.configurations import render_for_url
from leaderworkerset.webhooks.server import WebhookServer
from tests.integration.webhooks.conftest import REFS
from tests.support.tlsprobe import der, served_certificate, serves
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]

BEFORE_RENEWAL = 60  # creates before the renewal is triggered (the load is in full swing)
AFTER_SERVED = 60  # creates started after the new certificate is served that must succeed
CONCURRENCY = 4
SELECTOR_LABEL = "rotation.leaderworkerset.test/namespace"


@dataclass
class Rig:
    """Our server on 127.0.0.1, its CertManager, and webhook configurations for one namespace."""

    client: KubeClient
    namespace: str
    config: certs.CertConfig
    manager: certs.CertManager
    server: WebhookServer
    names: tuple[str, ...]


async def _register(client: KubeClient, namespace: str, port: int, ca: bytes, suffix: str) -> list[Obj]:
    configurations = render_for_url("127.0.0.1", port, ca)
    for configuration in configurations:
        configuration["metadata"]["name"] += f"-rotation-{suffix}"
        for webhook in configuration["webhooks"]:
            webhook["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: namespace}}
            webhook["timeoutSeconds"] = 10
        await client.create(REFS[configuration["kind"]], configuration)
    return configurations


@pytest.fixture
async def rig(webhook_client: KubeClient, namespace: str, tmp_path: Path) -> AsyncIterator[Rig]:
    suffix = uuid.uuid4().hex[:6]
    names = (
        f"{c.MUTATING_WEBHOOK_CONFIGURATION_NAME}-rotation-{suffix}",
        f"{c.VALIDATING_WEBHOOK_CONFIGURATION_NAME}-rotation-{suffix}",
    )
    config = certs.CertConfig(
        namespace=namespace,
        secret_name="webhook-cert",
        cert_dir=tmp_path,
        ip_addresses=("127.0.0.1",),
        configuration_names=names,
    )
    manager = certs.CertManager(webhook_client, config)
    artifacts = await manager.reconcile()
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0)  # the production reload interval
    await server.start()
    configurations = await _register(webhook_client, namespace, server.port, artifacts.ca_cert, suffix)
    await webhook_client.merge_patch(
        NAMESPACES, None, namespace, {"metadata": {"labels": {SELECTOR_LABEL: namespace}}}
    )
    rig = Rig(webhook_client, namespace, config, manager, server, names)
    await eventually(lambda: mutated(rig, "probe-0"), message="webhooks not called by the API server")
    yield rig
    for configuration in configurations:
        with contextlib.suppress(ApiStatusError):
            await webhook_client.delete(REFS[configuration["kind"]], None, configuration["metadata"]["name"])
    await server.stop()


def lws_pod(namespace: str, name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {c.LABEL_SET_NAME: "sample", c.LABEL_WORKER_INDEX: "0"},
            "annotations": {c.ANNOTATION_SIZE: "1"},
        },
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }


async def mutated(rig: Rig, name: str) -> bool:
    """Create a leader pod; True when our pod webhook labelled it."""
    created = await rig.client.create(PODS, lws_pod(rig.namespace, name))
    return c.LABEL_GROUP_KEY in created["metadata"]["labels"]


@dataclass
class Load:
    """An open-ended stream of pod creates through the webhooks, a few in flight at a time, until
    `stop`. Creates started after `mark_served` (the new certificate is served to new handshakes)
    are counted apart: they are the admissions the renewal must not break."""

    rig: Rig
    completed: int = 0
    completed_after_served: int = 0
    failures: list[str] = field(default_factory=list)
    _next: int = 0
    _served: bool = False
    _stopping: bool = False

    def mark_served(self) -> None:
        self._served = True

    def stop(self) -> None:
        self._stopping = True

    async def worker(self) -> None:
        while not self._stopping:
            index = self._next
            self._next += 1
            after_served = self._served
            try:
                if not await mutated(self.rig, f"load-{index}"):
                    self.failures.append(f"load-{index}: not mutated")
            except ApiStatusError as err:
                self.failures.append(f"load-{index}: {err.status.message}")
            self.completed += 1
            if after_served:
                self.completed_after_served += 1

    async def run(self) -> None:
        await asyncio.gather(*(self.worker() for _ in range(CONCURRENCY)))


Trigger = Callable[[], Awaitable[certs.CertArtifacts]]


def renewal(rig: Rig, renew_before: dt.timedelta) -> Trigger:
    """A reconcile with a renewal window longer than the validity, so the certificate counts as
    expiring now."""
    expiring = replace(rig.config, renew_before=renew_before)
    return certs.CertManager(rig.client, expiring).reconcile


async def rotate_under_load(rig: Rig, trigger: Trigger) -> tuple[Load, certs.CertArtifacts]:
    """Drive one rotation deterministically while pods keep being created: after BEFORE_RENEWAL
    creates, `trigger` it (it returns the new artifacts), wait until new handshakes get the new
    certificate, then keep creating until AFTER_SERVED creates that started after that point have
    completed. Each phase has a deadline, so the test fails only when rotation breaks (an admission
    fails or the new pair is never served), not because the load happened to finish first."""
    load = Load(rig)
    running = asyncio.create_task(load.run())
    try:
        await eventually(
            lambda: load.completed >= BEFORE_RENEWAL, timeout=LONG_TIMEOUT, message="load did not start"
        )
        renewed = await trigger()
        await eventually(
            lambda: _serves(rig, renewed),
            timeout=LONG_TIMEOUT,
            message="the renewed certificate is not served",
        )
        load.mark_served()
        await eventually(
            lambda: load.completed_after_served >= AFTER_SERVED,
            timeout=LONG_TIMEOUT,
            message="too few admissions after the new certificate was served",
        )
    finally:
        load.stop()
        await running
    return load, renewed


async def _serves(rig: Rig, artifacts: certs.CertArtifacts) -> bool:
    return await serves("127.0.0.1", rig.server.port, artifacts.cert, artifacts.ca_cert)


async def ca_bundles(rig: Rig) -> set[str]:
    bundles = set()
    for ref, name in zip(
        (certs.MUTATING_CONFIGURATIONS, certs.VALIDATING_CONFIGURATIONS), rig.names, strict=True
    ):
        configuration = await rig.client.get(ref, None, name)
        bundles |= {hook["clientConfig"]["caBundle"] for hook in configuration["webhooks"]}
    return bundles


async def test_serving_certificate_renewal_fails_no_admission(rig: Rig) -> None:
    first = rig.manager.artifacts
    assert first is not None

    load, renewed = await rotate_under_load(
        rig, renewal(rig, certissue.SERVING_VALIDITY + dt.timedelta(days=1))
    )

    assert load.failures == []
    assert load.completed_after_served >= AFTER_SERVED
    assert load.completed >= BEFORE_RENEWAL + AFTER_SERVED
    assert (renewed.ca_cert, renewed.cert != first.cert) == (first.ca_cert, True)
    assert await _serves(rig, renewed)
    assert await ca_bundles(rig) == {base64.b64encode(first.ca_cert).decode()}


async def test_ca_rotation_fails_no_admission(rig: Rig) -> None:
    first = rig.manager.artifacts
    assert first is not None

    load, renewed = await rotate_under_load(rig, renewal(rig, certissue.CA_VALIDITY + dt.timedelta(days=1)))

    assert load.failures == []
    assert load.completed_after_served >= AFTER_SERVED
    assert load.completed >= BEFORE_RENEWAL + AFTER_SERVED
    assert renewed.ca_cert != first.ca_cert
    assert await _serves(rig, renewed)
    # The rotating pass trusted both CAs; the next pass drops the old one.
    assert await ca_bundles(rig) == {base64.b64encode(renewed.ca_cert + first.ca_cert).decode()}
    await rig.manager.reconcile()
    assert await ca_bundles(rig) == {base64.b64encode(renewed.ca_cert).decode()}
    assert await mutated(rig, "after-rotation-0")


async def stored(rig: Rig) -> certs.CertArtifacts | None:
    secret = await rig.client.get_or_none(certs.SECRETS, rig.namespace, rig.config.secret_name)
    return certs.CertArtifacts.from_secret_data(secret.get("data") if secret else None)


@contextlib.asynccontextmanager
async def running(manager: certs.CertManager) -> AsyncIterator[None]:
    """The manager's loop as the manager process runs it, with a periodic pass far away: whatever
    happens within the test is the work of its watches."""
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(manager.run(stop, ready, interval=3600))
    await asyncio.wait_for(ready.wait(), LONG_TIMEOUT)
    try:
        yield
    finally:
        stop.set()
        await task


async def test_deleting_the_secret_rotates_at_once_and_fails_no_admission(rig: Rig) -> None:
    """The documented way to force a rotation: delete the Secret. The running manager sees it go,
    makes a new CA and serving pair, trusts the new CA beside the old one and serves the new pair
    within seconds, not at its next periodic pass."""
    first = rig.manager.artifacts
    assert first is not None

    async def delete_secret() -> certs.CertArtifacts:
        await rig.client.delete(certs.SECRETS, rig.namespace, rig.config.secret_name)

        async def replaced() -> certs.CertArtifacts | None:
            current = await stored(rig)
            return current if current is not None and current.ca_cert != first.ca_cert else None

        renewed = await eventually(replaced, timeout=LONG_TIMEOUT, message="the Secret was not recreated")
        assert renewed is not None
        return renewed

    async with running(rig.manager):
        load, renewed = await rotate_under_load(rig, delete_secret)

    assert load.failures == []
    assert load.completed_after_served >= AFTER_SERVED
    assert renewed.ca_cert != first.ca_cert
    # Woken passes only add trust; the periodic pass (an hour away here) drops the old CA.
    assert await ca_bundles(rig) == {base64.b64encode(renewed.ca_cert + first.ca_cert).decode()}


async def test_a_reset_ca_bundle_is_put_back_at_once(rig: Rig) -> None:
    """An apply of upstream's manifests or a `helm upgrade` writes the configurations without our
    caBundle; the running manager puts it back without waiting for its periodic pass."""
    artifacts = rig.manager.artifacts
    assert artifacts is not None
    ref, name = certs.VALIDATING_CONFIGURATIONS, rig.names[1]
    async with running(rig.manager):
        configuration = await rig.client.get(ref, None, name)
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"].pop("caBundle", None)
        await rig.client.update(ref, configuration)

        async def restored() -> bool:
            current = await rig.client.get(ref, None, name)
            bundles = {hook["clientConfig"].get("caBundle") for hook in current["webhooks"]}
            return bundles == {base64.b64encode(artifacts.ca_cert).decode()}

        await eventually(restored, timeout=LONG_TIMEOUT, message="the caBundle was not put back")


async def test_a_half_written_pair_keeps_the_old_certificate_served(tmp_path: Path) -> None:
    """A writer that replaces tls.key and tls.crt one after the other (not atomically, unlike a
    Secret volume) can be caught in between by a poll: that pair is skipped, not half-loaded."""
    config = certs.CertConfig(ip_addresses=("127.0.0.1",), cert_dir=tmp_path)
    first = certissue.generate(config, certs.utc_now())
    certs.write_cert_dir(tmp_path, first)
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0, reload_interval=3600)
    await server.start()
    try:
        assert server.reloader is not None
        expiring = replace(config, renew_before=certissue.SERVING_VALIDITY + dt.timedelta(days=1))
        second, _ = certissue.ensure(first, expiring, certs.utc_now())

        (tmp_path / c.TLS_KEY_FILE).write_bytes(second.key)
        assert not server.reloader.reload_if_changed()
        assert await served_certificate("127.0.0.1", server.port, first.ca_cert) == der(first.cert)

        (tmp_path / c.TLS_CERT_FILE).write_bytes(second.cert)
        assert server.reloader.reload_if_changed()
        assert await served_certificate("127.0.0.1", server.port, first.ca_cert) == der(second.cert)
    finally:
        await server.stop()
