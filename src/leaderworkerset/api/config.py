"""The manager's ``Configuration`` file (``config.lws.x-k8s.io`` v1 and v1alpha1).

Both versions have the same fields; v1alpha1 is accepted for compatibility, converted to v1 and
reported with a deprecation warning that is returned to the caller (the CLI decides how to show it).
Loading follows upstream's order: strict decode (unknown fields are errors), defaults, validation.
Values that need I/O (the operator namespace for the leader-election lease) are not resolved here.
"""

import math
import re
from pathlib import Path
from typing import Any, Final

import msgspec
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api.names import is_dns1035_label, is_dns1123_subdomain

DEFAULT_LEASE_DURATION: Final = "15s"
DEFAULT_RENEW_DEADLINE: Final = "10s"
DEFAULT_RETRY_PERIOD: Final = "2s"

DEPRECATION_WARNING_V1ALPHA1: Final = (
    f"apiVersion {c.CONFIG_API_VERSION_V1ALPHA1} of the Configuration is deprecated and was converted to "
    f"{c.CONFIG_API_VERSION_V1}; change the file's apiVersion to {c.CONFIG_API_VERSION_V1}"
)


class _ConfigStruct(
    msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """Configuration parts: unknown fields are rejected, as upstream's strict decoder does."""


class ControllerWebhook(_ConfigStruct):
    port: int | None = None
    host: str = ""
    cert_dir: str = ""


class LeaderElectionConfiguration(_ConfigStruct):
    """component-base's LeaderElectionConfiguration; durations are Go duration strings ("15s")."""

    leader_elect: bool | None = None
    lease_duration: str = ""
    renew_deadline: str = ""
    retry_period: str = ""
    resource_lock: str = ""
    resource_name: str = ""
    resource_namespace: str = ""


class ControllerMetrics(_ConfigStruct):
    bind_address: str = ""


class ControllerHealth(_ConfigStruct):
    health_probe_bind_address: str = ""
    readiness_endpoint_name: str = ""
    liveness_endpoint_name: str = ""


class TLSOptions(_ConfigStruct):
    min_version: str = ""
    cipher_suites: list[str] | None = None


class InternalCertManagement(_ConfigStruct):
    enable: bool | None = None
    webhook_service_name: str | None = None
    webhook_secret_name: str | None = None


class ClientConnection(_ConfigStruct):
    qps: float | None = None
    burst: int | None = None


class GangSchedulingManagement(_ConfigStruct):
    scheduler_provider: str | None = None


class Configuration(_ConfigStruct):
    api_version: str | None = None
    kind: str | None = None
    webhook: ControllerWebhook = msgspec.field(default_factory=ControllerWebhook)
    leader_election: LeaderElectionConfiguration | None = None
    metrics: ControllerMetrics = msgspec.field(default_factory=ControllerMetrics)
    health: ControllerHealth = msgspec.field(default_factory=ControllerHealth)
    tls: TLSOptions | None = None
    internal_cert_management: InternalCertManagement | None = None
    gang_scheduling_management: GangSchedulingManagement | None = None
    feature_gates: dict[str, bool] | None = None
    client_connection: ClientConnection | None = None

    def feature_enabled(self, gate: str) -> bool:
        """Whether feature ``gate`` is on (its default unless the file overrides it)."""
        return (self.feature_gates or {}).get(gate, c.FEATURE_GATE_DEFAULTS.get(gate, False))


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the offending field(s)."""


# ---- defaults ------------------------------------------------------------------------------------


def _default_leader_election(le: LeaderElectionConfiguration) -> None:
    le.resource_name = le.resource_name or c.DEFAULT_LEADER_ELECTION_ID
    le.resource_lock = le.resource_lock or c.DEFAULT_LEADER_ELECTION_RESOURCE_LOCK
    le.lease_duration = le.lease_duration or DEFAULT_LEASE_DURATION
    le.renew_deadline = le.renew_deadline or DEFAULT_RENEW_DEADLINE
    le.retry_period = le.retry_period or DEFAULT_RETRY_PERIOD
    if le.leader_elect is None:
        le.leader_elect = True


def _default_cert_management(icm: InternalCertManagement) -> None:
    if icm.enable is None:
        icm.enable = True
    # Names are only defaulted when the built-in rotation is on, as upstream does.
    if icm.enable:
        if icm.webhook_service_name is None:
            icm.webhook_service_name = c.DEFAULT_WEBHOOK_SERVICE_NAME
        if icm.webhook_secret_name is None:
            icm.webhook_secret_name = c.DEFAULT_WEBHOOK_SECRET_NAME


def set_defaults(cfg: Configuration) -> Configuration:
    """Fill unset fields with upstream's defaults (in place; returns ``cfg`` for chaining)."""
    if cfg.webhook.port is None:
        cfg.webhook.port = c.DEFAULT_WEBHOOK_PORT
    cfg.webhook.cert_dir = cfg.webhook.cert_dir or c.DEFAULT_WEBHOOK_CERT_DIR
    cfg.metrics.bind_address = cfg.metrics.bind_address or c.DEFAULT_METRICS_BIND_ADDRESS
    health = cfg.health
    health.health_probe_bind_address = health.health_probe_bind_address or c.DEFAULT_HEALTH_PROBE_BIND_ADDRESS
    health.liveness_endpoint_name = health.liveness_endpoint_name or c.DEFAULT_LIVENESS_ENDPOINT
    health.readiness_endpoint_name = health.readiness_endpoint_name or c.DEFAULT_READINESS_ENDPOINT
    if cfg.leader_election is None:
        cfg.leader_election = LeaderElectionConfiguration()
    _default_leader_election(cfg.leader_election)
    if cfg.internal_cert_management is None:
        cfg.internal_cert_management = InternalCertManagement()
    _default_cert_management(cfg.internal_cert_management)
    if cfg.client_connection is None:
        cfg.client_connection = ClientConnection()
    if cfg.client_connection.qps is None:
        cfg.client_connection.qps = c.DEFAULT_CLIENT_QPS
    if cfg.client_connection.burst is None:
        cfg.client_connection.burst = c.DEFAULT_CLIENT_BURST
    return cfg


# ---- conversion ----------------------------------------------------------------------------------


def convert_v1alpha1(cfg: Configuration) -> tuple[Configuration, str]:
    """v1alpha1 → v1: the fields are identical, so only the type meta changes (as upstream's
    generated conversion does: type meta is only written when the input had any)."""
    out = msgspec.structs.replace(cfg)
    if cfg.api_version or cfg.kind:
        out.api_version = c.CONFIG_API_VERSION_V1
        out.kind = cfg.kind or c.CONFIG_KIND
    return out, DEPRECATION_WARNING_V1ALPHA1


# ---- validation ----------------------------------------------------------------------------------


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_bool_map(gates: dict[str, bool]) -> str:
    """Go's ``%#v`` of a map[string]bool: keys sorted."""
    items = ", ".join(f"{_quote(k)}:{str(v).lower()}" for k, v in sorted(gates.items()))
    return "map[string]bool{" + items + "}"


def _not_supported(path: str, value: str, supported: list[str]) -> str:
    listed = ", ".join(_quote(s) for s in supported)
    return f"{path}: Unsupported value: {value}: supported values: {listed}"


def _validate_scheduler_provider(cfg: Configuration) -> list[str]:
    gsm = cfg.gang_scheduling_management
    if gsm is None:
        return []
    # Upstream reports this under the bare path "schedulerProvider".
    if not gsm.scheduler_provider:
        return ["schedulerProvider: Required value: must be set when gang scheduling is enabled"]
    if gsm.scheduler_provider not in c.SCHEDULER_PROVIDERS:
        supported = sorted(c.SCHEDULER_PROVIDERS)
        return [_not_supported("schedulerProvider", _quote(gsm.scheduler_provider), supported)]
    return []


def _validate_cert_management(cfg: Configuration) -> list[str]:
    icm = cfg.internal_cert_management
    if icm is None or not icm.enable:
        return []
    errors = []
    checks = (
        ("webhookServiceName", icm.webhook_service_name, is_dns1035_label),
        ("webhookSecretName", icm.webhook_secret_name, is_dns1123_subdomain),
    )
    for name, value, check in checks:
        if value is not None and (problems := check(value)):
            detail = ",".join(problems)
            errors.append(f"internalCertManagement.{name}: Invalid value: {_quote(value)}: {detail}")
    return errors


def _validate_feature_gates(cfg: Configuration) -> list[str]:
    gates = cfg.feature_gates or {}
    if all(name in c.FEATURE_GATE_DEFAULTS for name in gates):
        return []
    return [_not_supported("featureGates", _go_bool_map(gates), sorted(c.FEATURE_GATE_DEFAULTS))]


def _validate_durations(cfg: Configuration) -> list[str]:
    le = cfg.leader_election
    if le is None:
        return []
    errors = []
    for name in ("lease_duration", "renew_deadline", "retry_period"):
        text = getattr(le, name)
        if text:
            try:
                parse_go_duration(text)
            except ValueError as err:
                camel = msgspec.structs.fields(LeaderElectionConfiguration)
                field = next(f.encode_name for f in camel if f.name == name)
                errors.append(f"leaderElection.{field}: Invalid value: {_quote(text)}: {err}")
    return errors


def validate(cfg: Configuration) -> list[str]:
    """Every problem with ``cfg``, each rendered as upstream's field errors are."""
    return [
        *_validate_scheduler_provider(cfg),
        *_validate_cert_management(cfg),
        *_validate_feature_gates(cfg),
        *_validate_durations(cfg),
    ]


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


# ---- Go durations --------------------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string such as ``"1m30s"`` or ``"500ms"`` (time.ParseDuration)."""
    body = text[1:] if text[:1] in "+-" else text
    sign = -1.0 if text.startswith("-") else 1.0
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if match is None:
            raise ValueError(f"time: invalid duration {_quote(text)}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not body or math.isinf(total):
        raise ValueError(f"time: invalid duration {_quote(text)}")
    return sign * total


# ---- loading -------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML loading that refuses repeated keys (upstream's strict decoder does too)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate field "{key}"', key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_source(source: str | Path) -> str:
    if isinstance(source, Path):
        return source.read_text()
    if source and "\n" not in source and Path(source).is_file():
        return Path(source).read_text()
    return source


def _decode(doc: Any) -> Configuration:
    if doc is None:
        return Configuration()
    if not isinstance(doc, dict):
        raise ConfigError("configuration: expected a YAML mapping")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if api_version not in (c.CONFIG_API_VERSION_V1, c.CONFIG_API_VERSION_V1ALPHA1) or kind != c.CONFIG_KIND:
        raise ConfigError(
            f'no kind "{kind}" is registered for version "{api_version}": expected kind '
            f"{c.CONFIG_KIND} in {c.CONFIG_API_VERSION_V1} or {c.CONFIG_API_VERSION_V1ALPHA1}"
        )
    try:
        return msgspec.convert(doc, Configuration)
    except msgspec.ValidationError as err:
        raise ConfigError(f"strict decoding error: {err}") from err


def load_configuration_with_warnings(source: str | Path = "") -> tuple[Configuration, list[str]]:
    """Load, convert, default and validate a Configuration; also return deprecation warnings.

    ``source`` is a file path or the YAML text itself; empty means "no file": all defaults.
    """
    try:
        doc = yaml.load(_read_source(source), Loader=_StrictLoader)
    except yaml.YAMLError as err:
        raise ConfigError(f"configuration is not valid YAML: {err}") from err
    cfg = _decode(doc)
    warnings: list[str] = []
    if cfg.api_version == c.CONFIG_API_VERSION_V1ALPHA1:
        cfg, warning = convert_v1alpha1(cfg)
        warnings.append(warning)
    set_defaults(cfg)
    if errors := validate(cfg):
        raise ConfigError(_aggregate(errors))
    return cfg, warnings


def load_configuration(source: str | Path = "") -> Configuration:
    """Like :func:`load_configuration_with_warnings`, for callers that do not report warnings."""
    return load_configuration_with_warnings(source)[0]


def encode_configuration(cfg: Configuration) -> str:
    """The YAML form of ``cfg`` (what the manager logs at start-up)."""
    return yaml.safe_dump(msgspec.to_builtins(cfg), sort_keys=False)
