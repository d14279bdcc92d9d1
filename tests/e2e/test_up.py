"""`lws up --detach` as a new user runs it: one command brings up the cluster,
the manager and a sample LeaderWorkerSet whose groups all become ready; the
group tree shows them; `lws cluster down` stops everything."""

from __future__ import annotations

import itertools
import os
import signal
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


def _sigint_as_at_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_lws_up_into_a_pipe_prints_the_plain_tree_on_each_change(tmp_path: Path) -> None:
    """`make up | tee log` used to show blank lines where the live tree should be: off a terminal
    every new state of the tree is printed once, as plain text."""
    env = dict(os.environ, LWS_CLUSTERS_DIR=str(tmp_path / "clusters"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "leaderworkerset.cli", "up", "--name", "e2e-pipe"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # Ctrl-C must reach the demo even when the suite runs where SIGINT is ignored (a background
        # job of a non-interactive shell, `nohup`): the child would inherit that and never stop.
        preexec_fn=_sigint_as_at_a_terminal,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while not any("replicas 3/3 ready, 3 updated" in line for line in lines):
            assert time.monotonic() < deadline, "".join(lines)
            line = proc.stdout.readline()
            assert line, f"lws up ended early ({proc.poll()}):\n{''.join(lines)}"
            lines.append(line)
        lines += [proc.stdout.readline() for _ in range(3 * 5)]  # the rest of that tree
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the demo stops the cluster
        assert proc.wait(timeout=120) == 0
    trees = "".join(lines).rstrip("\n").split("\n\n")
    assert all(tree.startswith("LeaderWorkerSet default/demo  replicas ") for tree in trees), trees
    assert "\x1b" not in "".join(lines)
    assert all(a != b for a, b in itertools.pairwise(trees))  # printed once per change
    final = trees[-1].splitlines()
    assert len(final) == 1 + 3 * 5, final  # header, then 3 groups of a leader and 3 workers
    assert _processes_mentioning(str(tmp_path)) == []
