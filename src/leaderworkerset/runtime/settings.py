"""Turn the manager's `Configuration` (api/config.py, already defaulted and validated) into runtime
options, and resolve what needs I/O: the operator namespace for the leader-election lease.
"""

from __future__ import annotations

from pathlib import Path

from leaderworkerset.api import constants as c
from leaderworkerset.api.config import Configuration, parse_go_duration
from leaderworkerset.api.tls import parse_tls_options
from leaderworkerset.runtime.client import ClientOptions
from leaderworkerset.runtime.manager import ManagerOptions

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def operator_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The pod's namespace when running in a cluster, else `lws-system` (upstream's rule)."""
    try:
        namespace = path.read_text().strip()
    except OSError:
        return c.DEFAULT_NAMESPACE
    return namespace or c.DEFAULT_NAMESPACE


def client_options(cfg: Configuration, kubeconfig: str | None = None) -> ClientOptions:
    connection = cfg.client_connection
    qps = connection.qps if connection and connection.qps is not None else c.DEFAULT_CLIENT_QPS
    burst = connection.burst if connection and connection.burst is not None else c.DEFAULT_CLIENT_BURST
    return ClientOptions(kubeconfig=kubeconfig, qps=float(qps), burst=int(burst))


def scheduler_provider(cfg: Configuration) -> str | None:
    """gangSchedulingManagement.schedulerProvider: both the controllers and the webhooks follow it."""
    gang = cfg.gang_scheduling_management
    return gang.scheduler_provider if gang else None


def manager_options(
    cfg: Configuration, *, metrics_secure: bool = True, namespace: str | None = None
) -> ManagerOptions:
    """Options for `Manager` from a defaulted Configuration; `namespace` overrides the lease namespace."""
    election = cfg.leader_election
    assert election is not None, "call api.config.set_defaults first"
    return ManagerOptions(
        health_probe_bind_address=cfg.health.health_probe_bind_address,
        liveness_endpoint=cfg.health.liveness_endpoint_name,
        readiness_endpoint=cfg.health.readiness_endpoint_name,
        metrics_bind_address=cfg.metrics.bind_address,
        metrics_secure=metrics_secure,
        tls=parse_tls_options(cfg.tls),
        leader_elect=bool(election.leader_elect),
        election_namespace=namespace or election.resource_namespace or operator_namespace(),
        election_id=election.resource_name,
        lease_duration=parse_go_duration(election.lease_duration),
        renew_deadline=parse_go_duration(election.renew_deadline),
        retry_period=parse_go_duration(election.retry_period),
    )
