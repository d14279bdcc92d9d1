"""``lws manager``: the controller manager command.

It accepts upstream's Configuration file (``config.lws.x-k8s.io`` v1alpha1 and
v1) and its flags (explicit flags win over the file), merges them into the
process's ``Settings`` and runs the process (``cli/manager_process.py``): the
probe and metrics servers, the admission webhook server with its certificates
(on every replica, webhooks/setup.py), and — on the elected leader — the
LeaderWorkerSet, pod and DisaggregatedSet controllers (controllers/setup.py).

On the local dev cluster (``--webhook-url-host 127.0.0.1``) the API server calls
the host directly, so the webhook server issues a certificate for that address
(in a temporary cert dir unless one is given) and installs URL-based webhook
configurations itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from dataclasses import replace as replace_dataclass
from pathlib import Path
from typing import Annotated, Any

import structlog
from msgspec.structs import replace

from leaderworkerset.api import config as api_config
from leaderworkerset.api import constants as c
from leaderworkerset.cli.manager_process import Settings, run
from leaderworkerset.cli.quickoptions import UsageError, option
from leaderworkerset.controllers.disaggregatedset.setup import DisaggregatedSetApiMissingError
from leaderworkerset.controllers.scheduling import ProviderApiMissingError
from leaderworkerset.runtime import settings as runtime_settings
from leaderworkerset.runtime.logging import configure_logging

log = structlog.get_logger("manager")


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
    config: Annotated[Path | None, option("--config", help="Configuration file (v1alpha1 or v1).")] = None,
    kubeconfig: Annotated[
        str | None, option(help="Kubeconfig (default: in-cluster, then $KUBECONFIG).")
    ] = None,
    context: Annotated[str | None, option(help="Kubeconfig context.")] = None,
    disable_webhooks: Annotated[bool, option("--disable-webhooks", help="Run controllers only.")] = False,
    webhooks_only: Annotated[bool, option("--webhooks-only", help="Run the webhook server only.")] = False,
    webhook_port: Annotated[int | None, option(help="Webhook server port (default 9443).")] = None,
    cert_dir: Annotated[str | None, option(help="Directory with tls.crt/tls.key.")] = None,
    webhook_url_host: Annotated[
        str | None,
        option(help="Local dev: install URL webhook configurations pointing at this host address."),
    ] = None,
    webhook_url_port: Annotated[
        int | None,
        option(
            help="Local dev: the port the URL webhook configurations name (default: the webhook port), "
            "e.g. a load balancer in front of several replicas."
        ),
    ] = None,
    leader_elect: Annotated[bool | None, option("--leader-elect/--no-leader-elect")] = None,
    leader_elect_lease_duration: Annotated[str | None, option()] = None,
    leader_elect_renew_deadline: Annotated[str | None, option()] = None,
    leader_elect_retry_period: Annotated[str | None, option()] = None,
    leader_elect_resource_name: Annotated[str | None, option()] = None,
    namespace: Annotated[
        str | None,
        option(help="Operator namespace (lease, webhook Secret); default: the pod's, else lws-system."),
    ] = None,
    metrics_bind_address: Annotated[str | None, option(help="':8443' by default; '0' disables.")] = None,
    insecure_metrics: Annotated[bool, option(help="Serve metrics over plain HTTP (local runs).")] = False,
    health_probe_bind_address: Annotated[str | None, option(help="':8081' by default.")] = None,
    kube_api_qps: Annotated[float | None, option(help="Client QPS (default 500).")] = None,
    kube_api_burst: Annotated[int | None, option(help="Client burst (default 500).")] = None,
    max_concurrent_reconciles: Annotated[int, option(help="Workers per controller.")] = 5,
    watch_namespace: Annotated[
        str | None, option(help="Only manage LeaderWorkerSets in this namespace (default: all).")
    ] = None,
    enable_disaggregatedset: Annotated[
        bool,
        option(
            "--enable-disaggregatedset/--disable-disaggregatedset",
            help="Run the DisaggregatedSet controller (default on, as upstream; the Helm value "
            "enableDisaggregatedSet only gates its webhook and RBAC there). Off: its CRDs need not exist.",
        ),
    ] = True,
    disable_failure_ledger: Annotated[
        bool,
        option(
            "--disable-failure-ledger",
            help="Keep no per-LeaderWorkerSet failure ledger ConfigMap (on by default: it changes no "
            "object upstream owns). Restart back-off state is still stored for sets that ask for it.",
        ),
    ] = False,
    log_json: Annotated[bool | None, option("--log-json/--log-console")] = None,
) -> None:
    """Run the LeaderWorkerSet controllers and admission webhooks."""
    # Checked before logging is configured: a refused command line leaves the process's logging alone.
    if disable_webhooks and webhooks_only:
        raise UsageError("--disable-webhooks and --webhooks-only exclude each other")
    configure_logging(json=log_json)
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
        print(f"lws manager: invalid configuration: {err}", file=sys.stderr)
        raise SystemExit(2) from err
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
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run(settings))
    except (ProviderApiMissingError, DisaggregatedSetApiMissingError) as err:
        print(f"lws manager: {err}", file=sys.stderr)
        raise SystemExit(1) from err
