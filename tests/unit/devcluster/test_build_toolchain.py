"""Which Go builds each Kubernetes version (build.go_env / go_version), and the refusal of real nodes on
a version whose node binaries cannot be built, before anything is built."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leaderworkerset.cli import cluster, up
from leaderworkerset.devcluster import build, versions
from leaderworkerset.devcluster.realnodes import binaries


def test_a_version_newer_than_the_local_go_builds_with_its_toolchain_exported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOTOOLCHAIN", raising=False)  # the machine's Go (1.26) as it is configured
    env = build.go_env("v1.38.0-beta.0")
    assert env["GOTOOLCHAIN"] == "go1.27.3"
    assert build.go_version("v1.38.0-beta.0") == "go1.27.3"
    assert "_go1.27.3_" in build.bin_dir_for(kube_version="1.38").name


def test_a_version_the_local_go_builds_keeps_the_local_go_and_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOTOOLCHAIN", raising=False)
    local = build.go_version()
    assert "GOTOOLCHAIN" not in build.go_env("v1.37.2")
    assert build.go_version("v1.37.2") == local
    assert build.bin_dir_for(kube_version="1.37").name == versions.build_key(local, "v1.37.2")


def test_real_nodes_are_refused_on_a_version_without_node_binaries_naming_why() -> None:
    reason = binaries.unavailable_reason("1.38")
    assert reason is not None
    assert "real nodes are not available on Kubernetes v1.38.0-beta.0" in reason
    assert "sigs.k8s.io/iptables-wrappers" in reason
    assert binaries.unavailable_reason("1.37") is None
    binaries.require_available("1.37")
    with pytest.raises(build.BuildError, match="iptables-wrappers"):
        binaries.ensure_node_binaries("1.38")


@pytest.mark.parametrize("command", [["cluster", "up"], ["up"]], ids=["lws cluster up", "lws up"])
def test_lws_cluster_up_and_the_demo_refuse_real_nodes_on_1_38_before_building_anything(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWS_CACHE_DIR", str(tmp_path))  # nothing may be built or started here
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lws = typer.Typer()
    lws.command("up")(up.up)
    lws.add_typer(cluster.app, name="cluster")
    result = CliRunner().invoke(lws, [*command, "--kubernetes-version", "1.38", "--real-nodes", "2"])
    assert result.exit_code == 1
    words = " ".join(result.output.split())
    assert "real nodes are not available on Kubernetes v1.38.0-beta.0" in words
    assert "does not serve (403 Forbidden for its .zip)" in words
    assert list(tmp_path.iterdir()) == []
