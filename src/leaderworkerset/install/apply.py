"""Apply, wait for and remove an in-cluster install (the I/O shell around ``manifests``).

Everything is written with server-side apply as field manager ``lws``, forced: an upgrade, or a
takeover of an upstream install (same names), must win over fields an older installer set.
Uninstall deletes in reverse order and keeps the CRDs unless asked: deleting a CRD deletes every
LeaderWorkerSet and, through garbage collection, every workload pod.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Sequence
from typing import Any, Final

from lightkube import AsyncClient, codecs
from lightkube.core.exceptions import ApiError
from lightkube.resources.admissionregistration_v1 import (
    MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration,
)
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Secret
from lightkube.resources.discovery_v1 import EndpointSlice

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import CONTROLLER_MANAGER_NAME
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.install.manifests import object_key
from leaderworkerset.webhooks.certs import CA_CERT_KEY

DEFAULT_READY_TIMEOUT: Final = 180.0
POLL_SECONDS: Final = 1.0
# Kubernetes' own label tying an EndpointSlice to its Service.
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
Report = Callable[[str], None]


def _ignore(_: str) -> None:
    return None


async def apply_objects(
    client: AsyncClient, objects: Sequence[MutableObj], *, dry_run: bool = False, report: Report = _ignore
) -> list[str]:
    """Server-side apply each object in order; returns their keys (``Kind/ns/name``)."""
    keys: list[str] = []
    for obj in objects:
        resource = codecs.from_dict(obj)
        await client.apply(resource, field_manager=c.FIELD_MANAGER, force=True, dry_run=dry_run)
        key = object_key(obj)
        keys.append(key)
        report(f"{key} serverside-applied{' (server dry run)' if dry_run else ''}")
    return keys


def deployment_ready(deployment: Any) -> bool:
    """Every desired replica of the current generation is updated and available (kubectl's rule)."""
    spec_replicas = deployment.spec.replicas if deployment.spec.replicas is not None else 1
    status = deployment.status
    if status is None or (status.observedGeneration or 0) < (deployment.metadata.generation or 0):
        return False
    return (status.updatedReplicas or 0) >= spec_replicas and (status.availableReplicas or 0) >= spec_replicas


def webhooks_ready(configurations: Sequence[Any], slices: Sequence[Any], ca_pem: bytes | None) -> bool:
    """The API server trusts the manager's CA in every webhook, and the Service has a ready endpoint.

    Trusting *this* CA (the one in the certificate Secret) and not just any caBundle: a bundle left
    over from an earlier install would otherwise make a fresh install look ready too early.
    """
    if not ca_pem:
        return False
    for configuration in configurations:
        for webhook in configuration.webhooks or []:
            bundle = webhook.clientConfig.caBundle
            if not bundle or ca_pem.strip() not in base64.b64decode(bundle):
                return False
    return any(
        endpoint.conditions is not None and endpoint.conditions.ready
        for endpoint_slice in slices
        for endpoint in endpoint_slice.endpoints or []
    )


async def _issued_ca(client: AsyncClient, namespace: str) -> bytes | None:
    secret = await client.get(Secret, c.DEFAULT_WEBHOOK_SECRET_NAME, namespace=namespace)
    data = secret.data or {}
    return base64.b64decode(data[CA_CERT_KEY]) if CA_CERT_KEY in data else None


async def wait_ready(
    client: AsyncClient, namespace: str, *, timeout: float = DEFAULT_READY_TIMEOUT, report: Report = _ignore
) -> None:
    """Return once the manager Deployment is available and the webhooks can be called."""

    async def poll() -> None:
        while True:
            deployment = await client.get(Deployment, CONTROLLER_MANAGER_NAME, namespace=namespace)
            if deployment_ready(deployment):
                break
            await asyncio.sleep(POLL_SECONDS)
        report(f"Deployment/{namespace}/{CONTROLLER_MANAGER_NAME} available")
        while True:
            configurations = [
                await client.get(MutatingWebhookConfiguration, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
                await client.get(ValidatingWebhookConfiguration, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
            ]
            slices = [
                s
                async for s in client.list(
                    EndpointSlice,
                    namespace=namespace,
                    labels={SERVICE_NAME_LABEL: c.DEFAULT_WEBHOOK_SERVICE_NAME},
                )
            ]
            if webhooks_ready(configurations, slices, await _issued_ca(client, namespace)):
                break
            await asyncio.sleep(POLL_SECONDS)
        report("webhooks ready (the manager's CA injected, the Service has a ready endpoint)")

    async with asyncio.timeout(timeout):
        await poll()


async def delete_objects(
    client: AsyncClient, objects: Sequence[MutableObj], *, dry_run: bool = False, report: Report = _ignore
) -> list[str]:
    """Delete in reverse apply order (the Deployment before the RBAC it runs under); 404 is fine."""
    deleted: list[str] = []
    for obj in reversed(objects):
        resource: Any = type(codecs.from_dict(obj))
        meta = obj["metadata"]
        key = object_key(obj)
        try:
            await client.delete(resource, meta["name"], namespace=meta.get("namespace"), dry_run=dry_run)
        except ApiError as err:
            if err.status.code != 404:
                raise
            report(f"{key} not found")
            continue
        deleted.append(key)
        report(f"{key} deleted{' (server dry run)' if dry_run else ''}")
    return deleted
