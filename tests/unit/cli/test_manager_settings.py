"""How `lws manager` turns upstream's Configuration file plus flags into its settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import config as api_config
from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.cli import manager, manager_process
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.runtime.client import ClientOptions
from leaderworkerset.webhooks.inplacerestart import RestartAllContainersProbe
from leaderworkerset.webhooks.pod import volcano_pod_group_injector, workload_pod_group_injector
from leaderworkerset.webhooks.setup import webhook_options, webhook_run_config
from tests.support import upstream


def upstream_config() -> Path:
    """Upstream's shipped Configuration file (tests/support/upstream.py finds the data)."""
    return upstream.require("config", "controller_manager_config.yaml")


NO_FLAGS: dict[str, Any] = dict.fromkeys(
    (
        "webhook_port",
        "cert_dir",
        "metrics_bind_address",
        "health_probe_bind_address",
        "leader_elect",
        "lease_duration",
        "renew_deadline",
        "retry_period",
        "lease_name",
        "qps",
        "burst",
    )
)


def _settings(cfg: api_config.Configuration, **kwargs: Any) -> manager_process.Settings:
    return manager_process.Settings(config=cfg, client=ClientOptions(), namespace="lws-system", **kwargs)


def test_upstream_configuration_file_gives_upstream_defaults() -> None:
    cfg, warnings = api_config.load_configuration_with_warnings(upstream_config())
    options = manager_process.manager_options(_settings(cfg))

    assert warnings, "v1alpha1 is accepted with a deprecation warning"
    assert options.leader_elect is True
    assert (options.lease_duration, options.renew_deadline, options.retry_period) == (15.0, 10.0, 2.0)
    assert options.election_id == c.DEFAULT_LEADER_ELECTION_ID
    assert options.election_namespace == "lws-system"
    assert options.metrics_bind_address == ":8443"
    assert options.health_probe_bind_address == ":8081"


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        pytest.param(
            {"leader_elect": False}, lambda o, cfg: o.leader_elect is False, id="no leader election"
        ),
        pytest.param(
            {"lease_duration": "30s", "renew_deadline": "20s"},
            lambda o, cfg: (o.lease_duration, o.renew_deadline) == (30.0, 20.0),
            id="lease timings",
        ),
        pytest.param(
            {"metrics_bind_address": "0"}, lambda o, cfg: o.metrics_bind_address == "0", id="metrics disabled"
        ),
        pytest.param({"webhook_port": 19443}, lambda o, cfg: cfg.webhook.port == 19443, id="webhook port"),
        pytest.param(
            {"qps": 50.0, "burst": 80},
            lambda o, cfg: (cfg.client_connection.qps, cfg.client_connection.burst) == (50.0, 80),
            id="client rate limits",
        ),
    ],
)
def test_explicit_flags_win_over_the_file(flags: dict[str, Any], check: Any) -> None:
    cfg = manager._merge(api_config.load_configuration(upstream_config()), **{**NO_FLAGS, **flags})

    assert check(manager_process.manager_options(_settings(cfg)), cfg)


def test_webhooks_only_replica_does_not_take_part_in_leader_election() -> None:
    cfg = api_config.load_configuration(upstream_config())

    assert manager_process.manager_options(_settings(cfg, run_controllers=False)).leader_elect is False


def test_local_url_mode_issues_a_certificate_for_the_host_and_registers_url_configurations() -> None:
    cfg = manager._merge(api_config.load_configuration(""), **{**NO_FLAGS, "webhook_port": 19443})

    run = webhook_run_config(_settings(cfg, webhook_url_host="127.0.0.1"))

    assert run.register_url_configurations is True
    assert run.ip_addresses == ("127.0.0.1",)
    assert run.port == 19443


def test_in_cluster_mode_uses_the_configured_service_and_secret() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\n"
        "internalCertManagement: {enable: true, webhookServiceName: my-svc, webhookSecretName: my-secret}\n"
    )

    run = webhook_run_config(_settings(cfg))

    assert (run.service_name, run.secret_name, run.internal_cert_management) == ("my-svc", "my-secret", True)
    assert run.register_url_configurations is False


def test_external_certificates_turn_internal_management_off() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\ninternalCertManagement: {enable: false}\n"
    )

    assert webhook_run_config(_settings(cfg)).internal_cert_management is False


def test_volcano_gang_scheduling_makes_the_pod_webhook_stamp_pod_groups() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\n"
        "gangSchedulingManagement: {schedulerProvider: volcano}\n"
    )

    options = webhook_options(cfg)

    assert options.pod_group_injector is volcano_pod_group_injector
    assert options.scheduling.provider == "volcano"
    assert options.scheduling.feature_gate_enabled is False


def test_workload_aware_scheduling_gate_reaches_the_lws_webhook() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\n"
        "featureGates: {WorkloadAwareScheduling: true}\n"
    )

    assert webhook_options(cfg).scheduling.feature_gate_enabled is True


def test_tls_options_of_the_configuration_reach_the_webhook_server() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\ntls: {minVersion: VersionTLS13}\n"
    )

    for settings in (_settings(cfg), _settings(cfg, webhook_url_host="127.0.0.1")):
        run = webhook_run_config(settings)
        assert run.tls is not None
        assert run.tls.min_version == "TLSv1_3"


@pytest.mark.parametrize(
    ("flags", "setting", "want"),
    [
        pytest.param([], "enable_disaggregatedset", True, id="DS controller on by default, as upstream"),
        pytest.param(["--disable-disaggregatedset"], "enable_disaggregatedset", False, id="DS switched off"),
        pytest.param(["--enable-disaggregatedset"], "enable_disaggregatedset", True, id="DS explicitly on"),
        pytest.param([], "failure_ledger", True, id="failure ledger on by default"),
        pytest.param(["--disable-failure-ledger"], "failure_ledger", False, id="failure ledger off"),
    ],
)
def test_controller_switches_reach_the_settings(
    flags: list[str], setting: str, want: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer
    from typer.testing import CliRunner

    from leaderworkerset.cli import quickoptions

    app = typer.Typer()
    app.command()(quickoptions.typer_command(manager.manager))
    seen: list[manager_process.Settings] = []

    async def fake_run(settings: manager_process.Settings) -> None:
        seen.append(settings)

    monkeypatch.setattr(manager, "run", fake_run)
    # The command configures logging on the runner's stdout, which is closed after invoke.
    monkeypatch.setattr(manager, "configure_logging", lambda **_: None)
    result = CliRunner().invoke(app, ["--kubeconfig", "/nonexistent", *flags])
    assert result.exit_code == 0, result.output
    assert [getattr(s, setting) for s in seen] == [want]


def test_kubernetes_gang_scheduling_makes_the_pod_webhook_set_scheduling_groups() -> None:
    cfg = api_config.load_configuration(
        "apiVersion: config.lws.x-k8s.io/v1\nkind: Configuration\n"
        "gangSchedulingManagement: {schedulerProvider: kubernetes}\n"
        "featureGates: {WorkloadAwareScheduling: true}\n"
    )

    options = webhook_options(cfg)

    assert options.pod_group_injector is workload_pod_group_injector
    assert options.scheduling.provider == "kubernetes"


def test_local_url_mode_can_name_a_load_balancer_port_in_front_of_several_replicas() -> None:
    cfg = manager._merge(api_config.load_configuration(""), **{**NO_FLAGS, "webhook_port": 19443})

    run = webhook_run_config(_settings(cfg, webhook_url_host="127.0.0.1", webhook_url_port=20443))

    assert (run.port, run.url_port) == (19443, 20443)


def test_local_url_mode_names_the_server_port_by_default() -> None:
    cfg = manager._merge(api_config.load_configuration(""), **{**NO_FLAGS, "webhook_port": 19443})

    assert webhook_run_config(_settings(cfg, webhook_url_host="127.0.0.1")).url_port is None


class _Runnables:
    def __init__(self) -> None:
        self.names: list[str] = []

    def add_runnable(self, name: str, run: Any) -> None:
        self.names.append(name)


class _DroppingServer:
    """Answers the probe's dry-run create with the object stripped of its restart rules."""

    async def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        return {"spec": {"template": {"spec": {"containers": [{"name": "probe"}]}}}}


@pytest.mark.parametrize("probed", [True, False])
async def test_the_controllers_learn_the_restart_probes_answer_and_the_agent_image(
    probed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ext.ENV_RESTART_AGENT_IMAGE, "lws.local/lws-python:v1")
    probe, mgr = RestartAllContainersProbe(), _Runnables()
    support = manager_process._restart_support(mgr, _DroppingServer(), probe, probed=probed)  # type: ignore[arg-type]
    woken: list[str | None] = []
    support.on_change(lambda: woken.append(support.prerequisites().unsupported))
    assert support.prerequisites() == inplacerestart.Prerequisites(unsupported=None, agent_image=True)
    await probe.refresh(_DroppingServer())  # type: ignore[arg-type]
    assert woken == ["the API server drops container restart rules"]
    # Without webhooks in this process, a runnable of its own keeps the answer fresh.
    assert mgr.names == ([] if probed else ["restart-all-containers-probe"])
    monkeypatch.delenv(ext.ENV_RESTART_AGENT_IMAGE)
    bare = manager_process._restart_support(mgr, _DroppingServer(), probe, probed=True)  # type: ignore[arg-type]
    assert bare.prerequisites().agent_image is False
