"""Entry points for the manager and the dev cluster: certificates first, then the server.

Upstream starts its webhooks (and controllers) only after the certificates are ready; `serve`
does the same and sets `certs_ready` so the caller can gate its controllers on it.
"""

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from leaderworkerset.api import constants as c
from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.webhooks import certs
from leaderworkerset.webhooks.admission import WebhookOptions
from leaderworkerset.webhooks.configurations import render_for_url
from leaderworkerset.webhooks.metrics import WebhookMetrics
from leaderworkerset.webhooks.server import WebhookServer

LOCAL_HOST = "127.0.0.1"


@dataclass(frozen=True)
class WebhookRunConfig:
    """Manager-level webhook settings (Configuration `webhook.*` and `internalCertManagement.*`)."""

    host: str = ""
    port: int = c.DEFAULT_WEBHOOK_PORT
    cert_dir: Path = Path(c.DEFAULT_WEBHOOK_CERT_DIR)
    internal_cert_management: bool = True
    namespace: str = c.DEFAULT_NAMESPACE
    service_name: str = c.DEFAULT_WEBHOOK_SERVICE_NAME
    secret_name: str = c.DEFAULT_WEBHOOK_SECRET_NAME
    extra_dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    options: WebhookOptions = field(default_factory=WebhookOptions)
    tls: TLSSettings | None = None  # the Configuration's tls block, as for the metrics server
    cert_refresh_interval: float = 600.0
    # Dev cluster: once serving, point our webhook configurations at https://<host>:<port>.
    register_url_configurations: bool = False
    # ...at https://<host>:<url_port> instead when set: one address in front of several replicas.
    url_port: int | None = None

    def cert_config(self) -> certs.CertConfig:
        return certs.CertConfig(
            namespace=self.namespace,
            service_name=self.service_name,
            secret_name=self.secret_name,
            cert_dir=self.cert_dir,
            extra_dns_names=self.extra_dns_names,
            ip_addresses=self.ip_addresses,
        )


async def serve(
    client: KubeClient | None,
    config: WebhookRunConfig,
    stop: asyncio.Event,
    certs_ready: asyncio.Event | None = None,
    metrics: WebhookMetrics | None = None,
    serving: asyncio.Event | None = None,
) -> None:
    """Run cert management (when internal) and the HTTPS server until `stop` is set.

    ``serving`` is set once the server accepts calls and, on the dev cluster, our webhook
    configurations name it: before that the API server may still call a previous manager's address.
    """
    ready = certs_ready or asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    manager: certs.CertManager | None = None
    if config.internal_cert_management:
        if client is None:
            raise ValueError("internal certificate management needs an API client")
        manager = certs.CertManager(client, config.cert_config())
        tasks.append(asyncio.create_task(manager.run(stop, ready, config.cert_refresh_interval)))
        await _ready_or_stopped(ready, stop)
    else:
        ready.set()
    if stop.is_set():
        await asyncio.gather(*tasks)
        return
    server = WebhookServer(
        config.cert_dir,
        host=config.host,
        port=config.port,
        options=config.options,
        metrics=metrics,
        tls=config.tls,
    )
    await server.start()
    try:
        if config.register_url_configurations and client is not None and manager and manager.artifacts:
            port = config.url_port or server.port
            await install_local_configurations(client, port, manager.artifacts.ca_cert, config.host)
        if serving is not None:
            serving.set()
        await stop.wait()
    finally:
        await server.stop()
        await asyncio.gather(*tasks)


async def _ready_or_stopped(ready: asyncio.Event, stop: asyncio.Event) -> None:
    waiters = {asyncio.create_task(ready.wait()), asyncio.create_task(stop.wait())}
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()


async def install_local_configurations(
    client: KubeClient, port: int, ca_bundle: bytes, host: str = LOCAL_HOST
) -> None:
    """Dev cluster: point our two webhook configurations at https://<host>:<port> (server-side apply)."""
    refs = {"MutatingWebhookConfiguration": certs.MUTATING_CONFIGURATIONS}
    refs["ValidatingWebhookConfiguration"] = certs.VALIDATING_CONFIGURATIONS
    for configuration in render_for_url(host or LOCAL_HOST, port, ca_bundle):
        await client.apply(refs[configuration["kind"]], configuration)


def local_run_config(cert_dir: Path, port: int, namespace: str = c.DEFAULT_NAMESPACE) -> WebhookRunConfig:
    """Settings for a webhook server the local API server reaches on 127.0.0.1."""
    return WebhookRunConfig(
        host=LOCAL_HOST,
        port=port,
        cert_dir=cert_dir,
        namespace=namespace,
        extra_dns_names=("localhost",),
        ip_addresses=(LOCAL_HOST,),
        register_url_configurations=True,
    )
