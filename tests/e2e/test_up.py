"""`lws up --detach` as a new user runs it: one command brings up the cluster,
the manager and a sample LeaderWorkerSet whose groups all become ready; the
group tree shows them; `lws cluster down` stops everything."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_cluster_cli import _processes_mentioning

pytestmark = [pytest.mark.cluster, pytest.mark.full]


def _lws(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leaderworkerset.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _wait_for_tree(env: dict[str, str], kubeconfig: str, want: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    tree = ""
    while time.monotonic() < deadline:
        tree = _lws("status", "demo", "--kubeconfig", kubeconfig, env=env, timeout=60).stdout
        if want in tree:
            return tree
        time.sleep(1)  # polling a separate process's view of the cluster; bounded by the deadline
    raise AssertionError(f"tree never showed {want!r}; last tree:\n{tree}")


def test_lws_up_brings_up_three_ready_groups_of_four_and_down_cleans_up(tmp_path: Path) -> None:
    env = dict(os.environ, LWS_CLUSTERS_DIR=str(tmp_path / "clusters"), COLUMNS="200")

    up = _lws("up", "--name", "e2e", "--detach", env=env)
    assert up.returncode == 0, up.stderr
    kubeconfig = up.stdout.strip().splitlines()[-1]
    try:
        tree = _wait_for_tree(env, kubeconfig, "replicas 3/3 ready, 3 updated")
        assert "Available" in tree
        for group in range(3):
            assert f"group {group}  demo-{group}" in tree
            assert f"demo-{group} leader Running" in tree
            for worker in (1, 2, 3):
                assert f"demo-{group}-{worker} worker Running" in tree
        assert "not ready" not in tree
    finally:
        down = _lws("cluster", "down", "--name", "e2e", env=env)

    assert down.returncode == 0, down.stderr
    assert _processes_mentioning(str(tmp_path)) == []
