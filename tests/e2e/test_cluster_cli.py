"""`lws cluster up/down` as a user runs them: separate processes, a named
cluster that outlives the command, and nothing left running after `down`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

# Control-plane components and our own manager (`python -m leaderworkerset.cli manager`).
COMPONENT_NAMES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "leaderworkerset.devcluster.reaper",
    "leaderworkerset.cli",
)


def _lws(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leaderworkerset.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _processes_mentioning(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and any(name in cmdline for name in COMPONENT_NAMES):
            found.append(f"{proc.name}: {cmdline[:120]}")
    return found


def test_cluster_up_serves_ready_nodes_and_down_leaves_no_process(tmp_path: Path) -> None:
    env = dict(os.environ, LWS_CLUSTERS_DIR=str(tmp_path / "clusters"))

    up = _lws("cluster", "up", "--name", "cli", "--shape", "full", "--nodes", "4", env=env)
    assert up.returncode == 0, up.stderr
    kubeconfig = up.stdout.strip().splitlines()[-1]
    try:
        path = _lws("cluster", "kubeconfig", "--name", "cli", env=env)
        assert path.stdout.strip() == kubeconfig

        from leaderworkerset.devcluster import build

        kubectl = build.bin_dir_for() / "kubectl"
        nodes = subprocess.run(
            [str(kubectl), "--kubeconfig", kubeconfig, "get", "nodes", "--no-headers"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.splitlines()
        assert len(nodes) == 4
        assert all(line.split()[1] == "Ready" for line in nodes)
        assert _processes_mentioning(str(tmp_path)), "components should be running while the cluster is up"
    finally:
        down = _lws("cluster", "down", "--name", "cli", env=env)

    assert down.returncode == 0, down.stderr
    assert _processes_mentioning(str(tmp_path)) == []
    assert not (tmp_path / "clusters" / "cli").exists()


def test_cluster_up_runs_the_version_and_the_feature_gates_asked_for(tmp_path: Path) -> None:
    """`--kubernetes-version` picks the built version the API server reports; `--feature-gates` reaches it
    (MaxUnavailableStatefulSet=false makes it drop a StatefulSet's maxUnavailable)."""
    from leaderworkerset.devcluster import versions
    from leaderworkerset.devcluster.kube import RestClient

    env = dict(os.environ, LWS_CLUSTERS_DIR=str(tmp_path / "clusters"))
    version = versions.resolve_kubernetes_version()  # the matrix runs this on each version
    up = _lws(
        "cluster", "up", "--name", "gates", "--shape", "apiserver",
        "--kubernetes-version", versions.minor_of(version),
        "--feature-gates", "MaxUnavailableStatefulSet=false",
        env=env,
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    assert f"Kubernetes {version}" in up.stderr
    try:
        rest = RestClient.from_kubeconfig(Path(up.stdout.strip().splitlines()[-1]))
        info = rest.get("/version")
        assert info is not None
        assert info["gitVersion"] == version
        sts = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "gated", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "gated"}},
                "serviceName": "gated",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
                "template": {
                    "metadata": {"labels": {"app": "gated"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
        stored = rest.create("/apis/apps/v1/namespaces/default/statefulsets", sts)
        assert "maxUnavailable" not in stored["spec"]["updateStrategy"].get("rollingUpdate", {})
    finally:
        down = _lws("cluster", "down", "--name", "gates", env=env)
    assert down.returncode == 0, down.stderr
