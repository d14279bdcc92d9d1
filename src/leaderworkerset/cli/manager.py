"""``lws manager``: the controller manager process.

It accepts upstream's Configuration file (``config.lws.x-k8s.io`` v1alpha1 and
v1) and its flags (explicit flags win over the file), then runs, in one event
loop: the probe and metrics servers, the admission webhook server with its
certificates (on every replica), and — on the elected leader — the
LeaderWorkerSet, pod and DisaggregatedSet controllers.

Two webhook modes: in a cluster, certificates are managed internally (a Secret,
the serving pair written to the cert dir, caBundle injected into our webhook
configurations); on the local dev cluster (``--webhook-url-host 127.0.0.1``) the
API server calls the host directly, so the manager issues a certificate for
that address and installs URL-based webhook configurations itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from dataclasses import dataclass
from dataclasses import replace as replace_dataclass
from pathlib import Path
from typing import Annotated, Any

import structlog
import typer
from msgspec.structs import replace

from leaderworkerset.api import config as api_config
from leaderworkerset.api import constants as c
from leaderworkerset.api.tls import parse_tls_options
from leaderworkerset.runtime import settings as runtime_settings
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.logging import configure_logging
from leaderworkerset.runtime.manager import Manager, ManagerOptions
from leaderworkerset.runtime.resources import NAMESPACES

log = structlog.get_logger("manager")


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
    return replace_dataclass(options, leader_elect=options.leader_elect and settings.run_controllers)


def _scheduler_provider(cfg: api_config.Configuration) -> str | None:
    gang = cfg.gang_scheduling_management
    return gang.scheduler_provider if gang else None


def webhook_options(cfg: api_config.Configuration) -> Any:
    """What the admission handlers need to know from the Configuration (gang scheduling, gates)."""
    from leaderworkerset.webhooks.admission import WebhookOptions
    from leaderworkerset.webhooks.pod import volcano_pod_group_injector, workload_pod_group_injector
    from leaderworkerset.webhooks.scheduling import SchedulingAdmission

    gates = {**c.FEATURE_GATE_DEFAULTS, **(cfg.feature_gates or {})}
    provider = _scheduler_provider(cfg)
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


def webhook_run_config(settings: Settings) -> Any:
    from leaderworkerset.webhooks import runner

    cfg = settings.config
    port = cfg.webhook.port or c.DEFAULT_WEBHOOK_PORT
    cert_dir = Path(cfg.webhook.cert_dir or c.DEFAULT_WEBHOOK_CERT_DIR)
    options = webhook_options(cfg)
    tls = parse_tls_options(cfg.tls)
    if settings.webhook_url_host:
        local = runner.local_run_config(cert_dir, port, settings.namespace)
        return replace_dataclass(
            local,
            host=settings.webhook_url_host,
            ip_addresses=(settings.webhook_url_host,),
            url_port=settings.webhook_url_port,
            options=options,
            tls=tls,
        )
    icm = cfg.internal_cert_management
    return runner.WebhookRunConfig(
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


def _add_webhooks(mgr: Manager, client: KubeClient, settings: Settings) -> None:
    from leaderworkerset.webhooks import runner
    from leaderworkerset.webhooks.discovery import WorkloadApiProbe
    from leaderworkerset.webhooks.metrics import new_webhook_metrics

    config = webhook_run_config(settings)
    # The kubernetes provider admits a new spec.scheduling only while discovery finds the Workload API.
    kubernetes = _scheduler_provider(settings.config) == c.SCHEDULER_PROVIDER_KUBERNETES
    probe = WorkloadApiProbe() if kubernetes else None
    if probe is not None:
        config = replace_dataclass(
            config,
            options=replace_dataclass(
                config.options,
                scheduling=replace_dataclass(config.options.scheduling, workload_api_available=probe),
            ),
        )
    metrics = new_webhook_metrics(mgr.registry)
    config.cert_dir.mkdir(parents=True, exist_ok=True)
    certs_ready = asyncio.Event()
    serving = asyncio.Event()

    async def serve() -> None:
        # The manager cancels runnables on shutdown; turn that into runner's own stop
        # signal so the server closes and the certificate loop ends cleanly.
        stop = asyncio.Event()
        if settings.webhook_url_host:
            # Dev cluster: the certificate Secret lives in our namespace, which may not exist yet.
            await client.apply(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": settings.namespace}},
            )
        refresher = None
        if probe is not None:
            await probe.refresh(client)  # admission starts with a real answer
            refresher = asyncio.create_task(probe.run(client), name="workload-api-discovery")
        task = asyncio.create_task(runner.serve(client, config, stop, certs_ready, metrics, serving))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            stop.set()
            await task
            raise
        finally:
            if refresher is not None:
                refresher.cancel()

    mgr.add_runnable("webhooks", serve)

    async def certs_are_ready() -> bool:
        return certs_ready.is_set()

    async def webhooks_serving() -> bool:
        return serving.is_set()

    mgr.add_readiness_check("webhook-certs", certs_are_ready)
    # Ready only once the server answers (upstream checks its webhook server has started) and, on
    # the dev cluster, the configurations name it: a replacement manager is not ready while the
    # API server still calls its predecessor's address.
    mgr.add_readiness_check("webhook-server", webhooks_serving)
    # As upstream: controllers start once the certificates are in place, so the pods they cause
    # are admitted by a pod webhook that can answer.
    mgr.add_controller_gate(certs_ready.wait)


async def run(settings: Settings) -> None:
    client = new_client(settings.client)
    mgr = Manager(client, manager_options(settings))
    if settings.run_webhooks:
        _add_webhooks(mgr, client, settings)
    if settings.run_controllers:
        from leaderworkerset.controllers.disaggregatedset.setup import require_ds_api
        from leaderworkerset.controllers.scheduling import require_provider_api
        from leaderworkerset.controllers.setup import register_controllers

        try:
            await require_provider_api(client, _scheduler_provider(settings.config))
            if settings.enable_disaggregatedset:
                await require_ds_api(client)
        except Exception:
            await client.close()
            raise
        register_controllers(
            mgr,
            max_concurrent_reconciles=settings.max_concurrent_reconciles,
            namespace=settings.watch_namespace,
            enable_disaggregatedset=settings.enable_disaggregatedset,
            scheduler_provider=_scheduler_provider(settings.config),
            failure_ledger=settings.failure_ledger,
        )
    try:
        await mgr.run()
    finally:
        await client.close()


def _merge(cfg: api_config.Configuration, **flags: Any) -> api_config.Configuration:
    """Flags given on the command line win over the Configuration file (as upstream)."""
    webhook = cfg.webhook
    if flags["webhook_port"] is not None:
        webhook = replace(webhook, port=flags["webhook_port"])
    if flags["cert_dir"] is not None:
        webhook = replace(webhook, cert_dir=flags["cert_dir"])
    metrics = cfg.metrics
    if flags["metrics_bind_address"] is not None:
        metrics = replace(metrics, bind_address=flags["metrics_bind_address"])
    health = cfg.health
    if flags["health_probe_bind_address"] is not None:
        health = replace(health, health_probe_bind_address=flags["health_probe_bind_address"])
    election = cfg.leader_election or api_config.LeaderElectionConfiguration()
    if flags["leader_elect"] is not None:
        election = replace(election, leader_elect=flags["leader_elect"])
    for flag, field in (
        ("lease_duration", "lease_duration"),
        ("renew_deadline", "renew_deadline"),
        ("retry_period", "retry_period"),
        ("lease_name", "resource_name"),
    ):
        if flags[flag] is not None:
            election = replace(election, **{field: flags[flag]})
    client = cfg.client_connection or api_config.ClientConnection()
    if flags["qps"] is not None:
        client = replace(client, qps=flags["qps"])
    if flags["burst"] is not None:
        client = replace(client, burst=flags["burst"])
    return replace(
        cfg,
        webhook=webhook,
        metrics=metrics,
        health=health,
        leader_election=election,
        client_connection=client,
    )


def manager(
    config: Annotated[
        Path | None, typer.Option("--config", help="Configuration file (v1alpha1 or v1).")
    ] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="Kubeconfig (default: in-cluster, then $KUBECONFIG).")
    ] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context.")] = None,
    disable_webhooks: Annotated[
        bool, typer.Option("--disable-webhooks", help="Run controllers only.")
    ] = False,
    webhooks_only: Annotated[
        bool, typer.Option("--webhooks-only", help="Run the webhook server only.")
    ] = False,
    webhook_port: Annotated[int | None, typer.Option(help="Webhook server port (default 9443).")] = None,
    cert_dir: Annotated[str | None, typer.Option(help="Directory with tls.crt/tls.key.")] = None,
    webhook_url_host: Annotated[
        str | None,
        typer.Option(help="Local dev: install URL webhook configurations pointing at this host address."),
    ] = None,
    webhook_url_port: Annotated[
        int | None,
        typer.Option(
            help="Local dev: the port the URL webhook configurations name (default: the webhook port), "
            "e.g. a load balancer in front of several replicas."
        ),
    ] = None,
    leader_elect: Annotated[bool | None, typer.Option("--leader-elect/--no-leader-elect")] = None,
    leader_elect_lease_duration: Annotated[str | None, typer.Option()] = None,
    leader_elect_renew_deadline: Annotated[str | None, typer.Option()] = None,
    leader_elect_retry_period: Annotated[str | None, typer.Option()] = None,
    leader_elect_resource_name: Annotated[str | None, typer.Option()] = None,
    namespace: Annotated[
        str | None,
        typer.Option(help="Operator namespace (lease, webhook Secret); default: the pod's, else lws-system."),
    ] = None,
    metrics_bind_address: Annotated[
        str | None, typer.Option(help="':8443' by default; '0' disables.")
    ] = None,
    insecure_metrics: Annotated[
        bool, typer.Option(help="Serve metrics over plain HTTP (local runs).")
    ] = False,
    health_probe_bind_address: Annotated[str | None, typer.Option(help="':8081' by default.")] = None,
    kube_api_qps: Annotated[float | None, typer.Option(help="Client QPS (default 500).")] = None,
    kube_api_burst: Annotated[int | None, typer.Option(help="Client burst (default 500).")] = None,
    max_concurrent_reconciles: Annotated[int, typer.Option(help="Workers per controller.")] = 5,
    watch_namespace: Annotated[
        str | None, typer.Option(help="Only manage LeaderWorkerSets in this namespace (default: all).")
    ] = None,
    enable_disaggregatedset: Annotated[
        bool,
        typer.Option(
            "--enable-disaggregatedset/--disable-disaggregatedset",
            help="Run the DisaggregatedSet controller (default on, as upstream; the Helm value "
            "enableDisaggregatedSet only gates its webhook and RBAC there). Off: its CRDs need not exist.",
        ),
    ] = True,
    disable_failure_ledger: Annotated[
        bool,
        typer.Option(
            "--disable-failure-ledger",
            help="Keep no per-LeaderWorkerSet failure ledger ConfigMap (on by default: it changes no "
            "object upstream owns). Restart back-off state is still stored for sets that ask for it.",
        ),
    ] = False,
    log_json: Annotated[bool | None, typer.Option("--log-json/--log-console")] = None,
) -> None:
    """Run the LeaderWorkerSet controllers and admission webhooks."""
    configure_logging(json=log_json)
    if disable_webhooks and webhooks_only:
        raise typer.BadParameter("--disable-webhooks and --webhooks-only exclude each other")
    try:
        cfg, warnings = api_config.load_configuration_with_warnings(config or "")
        cfg = _merge(
            cfg,
            webhook_port=webhook_port,
            cert_dir=cert_dir,
            metrics_bind_address=metrics_bind_address,
            health_probe_bind_address=health_probe_bind_address,
            leader_elect=leader_elect,
            lease_duration=leader_elect_lease_duration,
            renew_deadline=leader_elect_renew_deadline,
            retry_period=leader_elect_retry_period,
            lease_name=leader_elect_resource_name,
            qps=kube_api_qps,
            burst=kube_api_burst,
        )
        if errors := api_config.validate(cfg):
            raise api_config.ConfigError("; ".join(errors))
    except api_config.ConfigError as err:
        typer.echo(f"lws manager: invalid configuration: {err}", err=True)
        raise typer.Exit(2) from err
    for warning in warnings:
        log.warning(warning)
    if webhook_url_host and not cert_dir and not cfg.webhook.cert_dir:
        cfg = replace(
            cfg, webhook=replace(cfg.webhook, cert_dir=tempfile.mkdtemp(prefix="lws-webhook-certs-"))
        )
    # Upstream's deployment switches webhooks off with ENABLE_WEBHOOKS=false.
    webhooks_enabled = not disable_webhooks and os.environ.get(c.ENV_ENABLE_WEBHOOKS, "true") != "false"
    settings = Settings(
        config=cfg,
        client=replace_dataclass(runtime_settings.client_options(cfg, kubeconfig), context=context),
        namespace=namespace or runtime_settings.operator_namespace(),
        run_controllers=not webhooks_only,
        run_webhooks=webhooks_enabled,
        webhook_url_host=webhook_url_host,
        webhook_url_port=webhook_url_port,
        metrics_secure=not insecure_metrics,
        max_concurrent_reconciles=max_concurrent_reconciles,
        watch_namespace=watch_namespace,
        enable_disaggregatedset=enable_disaggregatedset,
        failure_ledger=not disable_failure_ledger,
    )
    from leaderworkerset.controllers.disaggregatedset.setup import DisaggregatedSetApiMissingError
    from leaderworkerset.controllers.scheduling import ProviderApiMissingError

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run(settings))
    except (ProviderApiMissingError, DisaggregatedSetApiMissingError) as err:
        typer.echo(f"lws manager: {err}", err=True)
        raise typer.Exit(1) from err
