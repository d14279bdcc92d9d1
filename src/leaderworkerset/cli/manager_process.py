"""The ``lws manager`` process: one runtime Manager with the admission webhooks (webhooks/setup.py)
and the controllers (controllers/setup.py) registered on it, run in one event loop.

Every replica runs the probe and metrics servers and the webhook server with its certificates;
the elected leader also runs the LeaderWorkerSet, pod and DisaggregatedSet controllers.
``cli/manager.py`` parses the flags and merges them with the Configuration into ``Settings``.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, replace

import structlog

from leaderworkerset.api import config as api_config
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.disaggregatedset.setup import require_ds_api
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.scheduling import require_provider_api
from leaderworkerset.controllers.setup import register_controllers
from leaderworkerset.runtime import settings as runtime_settings
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.heap import HeapTrimmer, new_heap_metrics
from leaderworkerset.runtime.manager import Manager, ManagerOptions
from leaderworkerset.runtime.resources import NAMESPACES
from leaderworkerset.runtime.tlsconfig import shrink_tls_read_buffers
from leaderworkerset.webhooks.inplacerestart import RestartAllContainersProbe
from leaderworkerset.webhooks.setup import register_webhooks

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Settings:
    """Everything the manager needs, after the Configuration file and the flags were merged."""

    config: api_config.Configuration
    client: ClientOptions
    namespace: str
    run_controllers: bool = True
    run_webhooks: bool = True
    webhook_url_host: str | None = None
    # The port the URL configurations name, when another process (a local load balancer in front of
    # several replicas) listens there instead of this replica's own server; None: the server's port.
    webhook_url_port: int | None = None
    metrics_secure: bool = True
    max_concurrent_reconciles: int = 5
    watch_namespace: str | None = None
    enable_disaggregatedset: bool = True
    failure_ledger: bool = True


def manager_options(settings: Settings) -> ManagerOptions:
    """Runtime options from the merged Configuration; a webhooks-only replica never leads."""
    options = runtime_settings.manager_options(
        settings.config, metrics_secure=settings.metrics_secure, namespace=settings.namespace
    )
    return replace(options, leader_elect=options.leader_elect and settings.run_controllers)


def _restart_support(
    mgr: Manager, client: KubeClient, probe: RestartAllContainersProbe, *, probed: bool
) -> InPlaceRestartSupport:
    """What the controllers know of the in-place restart's prerequisites; `probed`: the webhooks
    of this process refresh the probe, else a runnable of its own does."""
    support = InPlaceRestartSupport(unsupported=probe.answer, agent_image=ext.restart_agent_image(os.environ))
    probe.on_change(support.changed)
    if not probed:

        async def refresh() -> None:
            await probe.refresh(client)
            await probe.run(client)

        mgr.add_runnable("restart-all-containers-probe", refresh)
    return support


async def run(settings: Settings) -> None:
    # Before the first connection: every watch, API and webhook connection reads through 16 KiB.
    if not shrink_tls_read_buffers():
        log.info("TLS read buffers left at asyncio's size: this asyncio has no SSLProtocol.max_size")
    client = new_client(settings.client)
    try:
        mgr = Manager(client, manager_options(settings))
        # In-place group restart: one probe of the cluster's RestartAllContainers support serves
        # admission and the sets' InPlaceRestartUnavailable condition.
        restart_all = RestartAllContainersProbe()
        if settings.run_webhooks:
            if settings.webhook_url_host:
                # Dev cluster: the certificate Secret lives in our namespace, which may not exist yet.
                # Not part of webhooks/setup.py: an install creates the namespace, and the operator's
                # RBAC (derived from the webhooks' and controllers' calls) grants no namespace writes.
                await client.apply(
                    NAMESPACES,
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": settings.namespace}},
                )
            register_webhooks(mgr, client, settings, restart_all=restart_all)
        if settings.run_controllers:
            provider = runtime_settings.scheduler_provider(settings.config)
            await require_provider_api(client, provider)
            if settings.enable_disaggregatedset:
                await require_ds_api(client)
            register_controllers(
                mgr,
                max_concurrent_reconciles=settings.max_concurrent_reconciles,
                namespace=settings.watch_namespace,
                enable_disaggregatedset=settings.enable_disaggregatedset,
                scheduler_provider=provider,
                failure_ledger=settings.failure_ledger,
                restart_support=_restart_support(mgr, client, restart_all, probed=settings.run_webhooks),
            )
        # Everything allocated so far (modules, the controllers' wiring) lives as long as the
        # process: out of the collector's generations, later collections do not scan it again.
        gc.freeze()
        # Every replica: what a burst freed goes back to the kernel (runtime/heap.py).
        mgr.add_runnable("heap-trim", HeapTrimmer(metrics=new_heap_metrics(mgr.registry)).run)
        await mgr.run()
    finally:
        await client.close()
