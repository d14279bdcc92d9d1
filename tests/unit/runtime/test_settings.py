"""Configuration → runtime options, and the operator namespace rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderworkerset.api.config import (
    ClientConnection,
    Configuration,
    LeaderElectionConfiguration,
    TLSOptions,
    set_defaults,
)
from leaderworkerset.runtime.settings import (
    client_options,
    manager_options,
    operator_namespace,
)


def test_defaults_match_upstream() -> None:
    opts = manager_options(set_defaults(Configuration()), namespace="lws-system")
    assert opts.health_probe_bind_address == ":8081"
    assert opts.metrics_bind_address == ":8443"
    assert opts.liveness_endpoint == "/healthz"
    assert opts.readiness_endpoint == "/readyz"
    assert opts.leader_elect is True
    assert opts.election_id == "b8b2488c.x-k8s.io"
    assert (opts.lease_duration, opts.renew_deadline, opts.retry_period) == (15.0, 10.0, 2.0)
    assert opts.election_namespace == "lws-system"
    client = client_options(set_defaults(Configuration()))
    assert (client.qps, client.burst) == (500.0, 500)


def test_overrides_are_carried() -> None:
    cfg = set_defaults(
        Configuration(
            leader_election=LeaderElectionConfiguration(
                leader_elect=False, lease_duration="1m", renew_deadline="30s", retry_period="500ms",
                resource_namespace="ops",
            ),
            client_connection=ClientConnection(qps=50.0, burst=100),
            tls=TLSOptions(min_version="VersionTLS13"),
        )
    )  # fmt: skip
    opts = manager_options(cfg)
    assert opts.leader_elect is False
    assert (opts.lease_duration, opts.renew_deadline, opts.retry_period) == (60.0, 30.0, 0.5)
    assert opts.election_namespace == "ops"
    assert opts.tls is not None
    assert opts.tls.min_version == "TLSv1_3"
    assert (client_options(cfg).qps, client_options(cfg).burst) == (50.0, 100)


@pytest.mark.parametrize(
    ("content", "want"),
    [
        pytest.param("team-a\n", "team-a", id="service account namespace"),
        pytest.param("", "lws-system", id="empty file"),
        pytest.param(None, "lws-system", id="not in a cluster"),
    ],
)
def test_operator_namespace(tmp_path: Path, content: str | None, want: str) -> None:
    path = tmp_path / "namespace"
    if content is not None:
        path.write_text(content)
    assert operator_namespace(path) == want
