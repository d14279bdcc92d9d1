"""Configuration file: decode, defaults, v1alpha1 conversion and validation, table-driven."""

from pathlib import Path
from typing import Any

import msgspec
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api.config import (
    DEPRECATION_WARNING_V1ALPHA1,
    ConfigError,
    Configuration,
    encode_configuration,
    load_configuration,
    load_configuration_with_warnings,
    parse_go_duration,
)
from tests.support import upstream

UPSTREAM_CONFIG = ("config", "controller_manager_config.yaml")
UPSTREAM_SAMPLE = ("samples", "lws_v1alpha1_configuration.yaml")

V1 = f"apiVersion: {c.CONFIG_API_VERSION_V1}\nkind: Configuration\n"
WARNING = DEPRECATION_WARNING_V1ALPHA1
V1ALPHA1 = f"apiVersion: {c.CONFIG_API_VERSION_V1ALPHA1}\nkind: Configuration\n"

# What upstream's SetDefaults_Configuration produces from an empty file.
ALL_DEFAULTS: dict[str, Any] = {
    "webhook": {"port": 9443, "certDir": "/tmp/k8s-webhook-server/serving-certs"},
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceLock": "leases",
        "resourceName": "b8b2488c.x-k8s.io",
    },
    "metrics": {"bindAddress": ":8443"},
    "health": {
        "healthProbeBindAddress": ":8081",
        "readinessEndpointName": "/readyz",
        "livenessEndpointName": "/healthz",
    },
    "internalCertManagement": {
        "enable": True,
        "webhookServiceName": "lws-webhook-service",
        "webhookSecretName": "lws-webhook-server-cert",
    },
    "clientConnection": {"qps": 500.0, "burst": 500},
}


def _body(cfg: Configuration) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(cfg)
    out.pop("apiVersion", None)
    out.pop("kind", None)
    return out


def _with(**overrides: Any) -> dict[str, Any]:
    want = {k: dict(v) for k, v in ALL_DEFAULTS.items()}
    for section, values in overrides.items():
        if values is None:
            want.pop(section, None)
        elif isinstance(values, dict) and section in want:
            want[section].update(values)
        else:
            want[section] = values
    return want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("", ALL_DEFAULTS, id="no file: all defaults"),
        pytest.param(V1, ALL_DEFAULTS, id="empty v1 file: all defaults"),
        pytest.param(
            V1 + "webhook: {port: 9000, host: 0.0.0.0}\n",
            _with(webhook={"port": 9000, "host": "0.0.0.0"}),
            id="explicit webhook port and host kept",
        ),
        pytest.param(
            V1 + "leaderElection: {leaderElect: false, leaseDuration: 1m}\n",
            _with(leaderElection={"leaderElect": False, "leaseDuration": "1m"}),
            id="leader election off is kept, other durations defaulted",
        ),
        pytest.param(
            V1 + "internalCertManagement: {enable: false}\n",
            {**ALL_DEFAULTS, "internalCertManagement": {"enable": False}},
            id="cert names are not defaulted when internal certs are off",
        ),
        pytest.param(
            V1 + "internalCertManagement: {webhookServiceName: my-svc}\n",
            _with(internalCertManagement={"webhookServiceName": "my-svc"}),
            id="custom service name kept, secret name defaulted",
        ),
        pytest.param(
            V1 + "clientConnection: {qps: 50}\n",
            _with(clientConnection={"qps": 50.0}),
            id="qps override, burst default",
        ),
        pytest.param(
            V1 + "gangSchedulingManagement: {schedulerProvider: volcano}\n",
            _with(gangSchedulingManagement={"schedulerProvider": "volcano"}),
            id="volcano provider",
        ),
        pytest.param(
            V1 + "featureGates: {WorkloadAwareScheduling: true}\n",
            _with(featureGates={"WorkloadAwareScheduling": True}),
            id="known feature gate",
        ),
        pytest.param(
            V1 + "tls: {minVersion: VersionTLS13, cipherSuites: [A, B]}\n",
            _with(tls={"minVersion": "VersionTLS13", "cipherSuites": ["A", "B"]}),
            id="tls options",
        ),
    ],
)
def test_load_applies_upstream_defaults(text: str, want: dict[str, Any]) -> None:
    assert _body(load_configuration(text)) == want


def test_load_reads_a_file_path(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(V1 + "metrics: {bindAddress: ':9090'}\n")
    want = _with(metrics={"bindAddress": ":9090"})
    assert _body(load_configuration(path)) == want
    assert _body(load_configuration(str(path))) == want


@pytest.mark.parametrize(
    ("source", "want_api_version", "want_warnings"),
    [
        pytest.param(V1, c.CONFIG_API_VERSION_V1, [], id="v1 has no warning"),
        pytest.param(V1ALPHA1, c.CONFIG_API_VERSION_V1, [WARNING], id="v1alpha1 converted"),
        pytest.param("", None, [], id="no file has no type meta"),
    ],
)
def test_v1alpha1_is_converted_with_a_warning(
    source: str | Path, want_api_version: str | None, want_warnings: list[str]
) -> None:
    cfg, warnings = load_configuration_with_warnings(source)
    assert cfg.api_version == want_api_version
    assert warnings == want_warnings


def test_upstream_manager_config_is_converted_with_a_warning() -> None:
    cfg, warnings = load_configuration_with_warnings(upstream.require(*UPSTREAM_CONFIG))
    assert cfg.api_version == c.CONFIG_API_VERSION_V1
    assert warnings == [WARNING]


def test_upstream_manager_config_loads_to_defaults() -> None:
    assert _body(load_configuration(upstream.require(*UPSTREAM_CONFIG))) == ALL_DEFAULTS


def test_upstream_scaffold_sample_is_refused_for_its_wrong_group() -> None:
    with pytest.raises(ConfigError, match=r"lws\.x-k8s\.io/v1alpha1"):
        load_configuration(upstream.require(*UPSTREAM_SAMPLE))


@pytest.mark.parametrize(
    ("text", "want_message"),
    [
        pytest.param(
            V1 + "gangSchedulingManagement: {}\n",
            "schedulerProvider: Required value: must be set when gang scheduling is enabled",
            id="gang scheduling block without provider",
        ),
        pytest.param(
            V1 + "gangSchedulingManagement: {schedulerProvider: ''}\n",
            "schedulerProvider: Required value: must be set when gang scheduling is enabled",
            id="empty provider",
        ),
        pytest.param(
            V1 + "gangSchedulingManagement: {schedulerProvider: yunikorn}\n",
            'schedulerProvider: Unsupported value: "yunikorn": supported values: "kubernetes", "volcano"',
            id="unknown provider",
        ),
        pytest.param(
            V1 + "internalCertManagement: {webhookServiceName: 1svc}\n",
            'internalCertManagement.webhookServiceName: Invalid value: "1svc": a DNS-1035 label must '
            "consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
            "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
            "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            id="service name must be a DNS-1035 label",
        ),
        pytest.param(
            V1 + "internalCertManagement: {webhookSecretName: Bad.Secret}\n",
            'internalCertManagement.webhookSecretName: Invalid value: "Bad.Secret": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="secret name must be a DNS-1123 subdomain",
        ),
        pytest.param(
            V1 + "featureGates: {NoSuchGate: true, WorkloadAwareScheduling: false}\n",
            'featureGates: Unsupported value: map[string]bool{"NoSuchGate":true, '
            '"WorkloadAwareScheduling":false}: supported values: "WorkloadAwareScheduling"',
            id="unknown feature gate",
        ),
        pytest.param(
            V1 + "leaderElection: {retryPeriod: soon}\n",
            'leaderElection.retryPeriod: Invalid value: "soon": time: invalid duration "soon"',
            id="unparsable duration",
        ),
        pytest.param(
            V1 + "gangSchedulingManagement: {}\nfeatureGates: {X: true}\n",
            "[schedulerProvider: Required value: must be set when gang scheduling is enabled, "
            'featureGates: Unsupported value: map[string]bool{"X":true}: supported values: '
            '"WorkloadAwareScheduling"]',
            id="several errors are aggregated",
        ),
    ],
)
def test_validation_errors_name_the_field(text: str, want_message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_configuration(text)
    assert str(err.value) == want_message


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            V1 + "internalCertManagement: {enable: false, webhookServiceName: 1svc}\n",
            # Upstream defaults the service and secret names only when internal certs are on.
            {**ALL_DEFAULTS, "internalCertManagement": {"enable": False, "webhookServiceName": "1svc"}},
            id="names are not checked when internal certs are off",
        ),
        pytest.param(
            V1 + "gangSchedulingManagement: {schedulerProvider: kubernetes}\n",
            _with(gangSchedulingManagement={"schedulerProvider": "kubernetes"}),
            id="kubernetes",
        ),
    ],
)
def test_valid_configurations_load(text: str, want: dict[str, Any]) -> None:
    assert _body(load_configuration(text)) == want


@pytest.mark.parametrize(
    ("source", "want_match"),
    [
        pytest.param(V1 + "unknownField: 1\n", "unknown field `unknownField`", id="unknown top-level field"),
        pytest.param(V1 + "webhook: {prot: 1}\n", r"`prot`.*webhook", id="unknown nested field"),
        pytest.param(V1 + "webhook: {port: nine}\n", r"webhook\.port", id="wrong type"),
        pytest.param("apiVersion: v1\nkind: ConfigMap\n", '"ConfigMap"', id="not a Configuration"),
        pytest.param("- a\n- b\n", "mapping", id="not a mapping"),
        pytest.param("webhook: [\n", "not valid YAML", id="broken YAML"),
        pytest.param(V1 + "webhook: {}\nwebhook: {}\n", 'duplicate field "webhook"', id="repeated key"),
    ],
)
def test_decode_errors(source: str | Path, want_match: str) -> None:
    with pytest.raises(ConfigError, match=want_match):
        load_configuration(source)


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        pytest.param(None, False, id="default off"),
        pytest.param({c.FEATURE_WORKLOAD_AWARE_SCHEDULING: True}, True, id="switched on"),
    ],
)
def test_feature_enabled(gates: dict[str, bool] | None, want: bool) -> None:
    cfg = Configuration(feature_gates=gates)
    assert cfg.feature_enabled(c.FEATURE_WORKLOAD_AWARE_SCHEDULING) is want


@pytest.mark.parametrize(
    ("text", "want_seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes and seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1.5h", 5400.0, id="fractional hours"),
        pytest.param("0", 0.0, id="bare zero"),
        pytest.param("-2s", -2.0, id="negative"),
    ],
)
def test_parse_go_duration(text: str, want_seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(want_seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1s2", "--1s"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


def test_encoded_configuration_loads_back_identically() -> None:
    cfg = load_configuration(V1 + "featureGates: {WorkloadAwareScheduling: true}\n")
    text = encode_configuration(cfg)
    assert load_configuration(text) == cfg
