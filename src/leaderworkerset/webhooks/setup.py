"""Registration of the admission webhooks on a runtime Manager (called by `lws manager`), as
controllers/setup.py registers the controllers.

Two modes: in a cluster, certificates are managed internally (a Secret, the serving pair written to
the cert dir, caBundle injected into our webhook configurations) or by cert-manager; on the local
dev cluster (a `webhook_url_host`) the API server calls the host directly, so the server issues a
certificate for that address and installs URL-based webhook configurations itself.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from leaderworkerset.api import config as api_config
from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.api.tls import parse_tls_options
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.settings import scheduler_provider
from leaderworkerset.webhooks.admission import WebhookOptions
from leaderworkerset.webhooks.discovery import WorkloadApiProbe
from leaderworkerset.webhooks.inplacerestart import RestartAllContainersProbe
from leaderworkerset.webhooks.metrics import WebhookMetrics, new_webhook_metrics
from leaderworkerset.webhooks.pod import volcano_pod_group_injector, workload_pod_group_injector
from leaderworkerset.webhooks.quarantine import QuarantineView
from leaderworkerset.webhooks.runner import WebhookRunConfig, local_run_config, serve
from leaderworkerset.webhooks.scheduling import SchedulingAdmission


class WebhookSettings(Protocol):
    """What the webhooks read from the manager's merged settings (the CLI's `Settings` has these)."""

    @property
    def config(self) -> api_config.Configuration: ...

    @property
    def namespace(self) -> str: ...

    @property
    def webhook_url_host(self) -> str | None: ...

    @property
    def webhook_url_port(self) -> int | None: ...


@dataclass(frozen=True)
class RegisteredWebhooks:
    config: WebhookRunConfig
    metrics: WebhookMetrics
    certs_ready: asyncio.Event  # set once the serving pair is in the cert dir
    serving: asyncio.Event  # set once the server answers (and, on the dev cluster, is registered)
    workload_api: WorkloadApiProbe | None = None  # only with the kubernetes scheduler provider
    quarantine: QuarantineView | None = None  # the nodes each set quarantines, for the pod webhook
    restart_all_containers: RestartAllContainersProbe | None = None  # in-place group restart support


def webhook_options(cfg: api_config.Configuration) -> WebhookOptions:
    """What the admission handlers need to know from the Configuration (gang scheduling, gates)."""
    gates = {**c.FEATURE_GATE_DEFAULTS, **(cfg.feature_gates or {})}
    provider = scheduler_provider(cfg)
    injectors = {
        c.SCHEDULER_PROVIDER_VOLCANO: volcano_pod_group_injector,
        c.SCHEDULER_PROVIDER_KUBERNETES: workload_pod_group_injector,
    }
    return WebhookOptions(
        scheduling=SchedulingAdmission(
            feature_gate_enabled=gates[c.FEATURE_WORKLOAD_AWARE_SCHEDULING], provider=provider
        ),
        pod_group_injector=injectors.get(provider or ""),
    )


def webhook_run_config(settings: WebhookSettings) -> WebhookRunConfig:
    """The server's address, certificates and handler options from the merged Configuration."""
    cfg = settings.config
    port = cfg.webhook.port or c.DEFAULT_WEBHOOK_PORT
    cert_dir = Path(cfg.webhook.cert_dir or c.DEFAULT_WEBHOOK_CERT_DIR)
    options = webhook_options(cfg)
    tls = parse_tls_options(cfg.tls)
    if settings.webhook_url_host:
        local = local_run_config(cert_dir, port, settings.namespace)
        return replace(
            local,
            host=settings.webhook_url_host,
            ip_addresses=(settings.webhook_url_host,),
            url_port=settings.webhook_url_port,
            options=options,
            tls=tls,
        )
    icm = cfg.internal_cert_management
    return WebhookRunConfig(
        host=cfg.webhook.host,
        port=port,
        cert_dir=cert_dir,
        # With internal management off, cert-manager (or the operator) fills the cert dir.
        internal_cert_management=not (icm is not None and icm.enable is False),
        namespace=settings.namespace,
        service_name=(icm.webhook_service_name if icm else None) or c.DEFAULT_WEBHOOK_SERVICE_NAME,
        secret_name=(icm.webhook_secret_name if icm else None) or c.DEFAULT_WEBHOOK_SECRET_NAME,
        options=options,
        tls=tls,
    )


def register_webhooks(
    manager: Manager,
    client: KubeClient,
    settings: WebhookSettings,
    *,
    restart_all: RestartAllContainersProbe | None = None,
) -> RegisteredWebhooks:
    """Add the webhook server (with its certificates) to `manager` as a runnable, its two readiness
    checks, and the gate that holds the controllers until the certificates are in place.

    Call once per manager, before `manager.run()`; every replica serves, leader or not.
    `restart_all`: the RestartAllContainers probe to refresh and admit with (the CLI shares it
    with the controllers); a new one when None.
    """
    config = webhook_run_config(settings)
    # The kubernetes provider admits a new spec.scheduling only while discovery finds the Workload API.
    kubernetes = scheduler_provider(settings.config) == c.SCHEDULER_PROVIDER_KUBERNETES
    probe = WorkloadApiProbe() if kubernetes else None
    if probe is not None:
        config = replace(
            config,
            options=replace(
                config.options, scheduling=replace(config.options.scheduling, workload_api_available=probe)
            ),
        )
    quarantine = QuarantineView.watching(client)
    restart_all = restart_all or RestartAllContainersProbe()
    config = replace(
        config,
        options=replace(
            config.options,
            quarantined_nodes=quarantine,
            set_annotations=quarantine.annotations,
            restart_all_containers=restart_all,
            # The agent runs from the manager's own image (`python -m leaderworkerset.agent`); the
            # chart and `lws install` name it here.
            restart_agent_image=ext.restart_agent_image(os.environ),
        ),
    )
    registered = RegisteredWebhooks(
        config, new_webhook_metrics(manager.registry), asyncio.Event(), asyncio.Event(), probe, quarantine,
        restart_all,
    )  # fmt: skip
    config.cert_dir.mkdir(parents=True, exist_ok=True)

    async def run() -> None:
        await _serve(client, registered)

    manager.add_runnable("webhooks", run)

    async def certs_are_ready() -> bool:
        return registered.certs_ready.is_set()

    async def webhooks_serving() -> bool:
        return registered.serving.is_set()

    manager.add_readiness_check("webhook-certs", certs_are_ready)
    # Ready only once the server answers (upstream checks its webhook server has started) and, on
    # the dev cluster, the configurations name it: a replacement manager is not ready while the
    # API server still calls its predecessor's address.
    manager.add_readiness_check("webhook-server", webhooks_serving)
    # As upstream: controllers start once the certificates are in place, so the pods they cause
    # are admitted by a pod webhook that can answer.
    manager.add_controller_gate(registered.certs_ready.wait)
    return registered


async def _serve(client: KubeClient, webhooks: RegisteredWebhooks) -> None:
    """The runnable: `runner.serve` until the manager cancels it."""
    # The manager cancels runnables on shutdown; turn that into runner's own stop
    # signal so the server closes and the certificate loop ends cleanly.
    stop = asyncio.Event()
    probe = webhooks.workload_api
    refreshers = []
    if probe is not None:
        await probe.refresh(client)  # admission starts with a real answer
        refreshers.append(asyncio.create_task(probe.run(client), name="workload-api-discovery"))
    if webhooks.quarantine is not None:
        refreshers.append(asyncio.create_task(webhooks.quarantine.run(), name="quarantine-view"))
    if webhooks.restart_all_containers is not None:
        await webhooks.restart_all_containers.refresh(client)
        refreshers.append(
            asyncio.create_task(
                webhooks.restart_all_containers.run(client), name="restart-all-containers-probe"
            )
        )
    task = asyncio.create_task(
        serve(client, webhooks.config, stop, webhooks.certs_ready, webhooks.metrics, webhooks.serving)
    )
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        stop.set()
        await task
        raise
    finally:
        for refresher in refreshers:
            refresher.cancel()
