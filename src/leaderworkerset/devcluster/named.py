"""Named, long-lived local clusters for the CLI (``lws cluster up/down``).

Their work dirs live under the cache root so ``lws cluster down`` in another
shell finds the recorded pids; test fixtures use throw-away work dirs instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from leaderworkerset.devcluster import build, versions
from leaderworkerset.devcluster.cluster import (
    STATE_FILE,
    ClusterOptions,
    ClusterState,
    LocalCluster,
    stop_state,
)
from leaderworkerset.devcluster.processes import is_ours

DEFAULT_NAME = "lws"


def clusters_root() -> Path:
    explicit = os.environ.get("LWS_CLUSTERS_DIR")
    return Path(explicit) if explicit else versions.cache_root() / "clusters"


def workdir(name: str) -> Path:
    return clusters_root() / name


def is_running(name: str) -> bool:
    path = workdir(name)
    if not (path / STATE_FILE).exists():
        return False
    state = ClusterState.load(path)
    return bool(state.pids) and all(is_ours(pid, state.workdir) for pid in state.pids.values())


def up(name: str, options: ClusterOptions, kubernetes_version: str | None = None) -> LocalCluster:
    """Start cluster ``name`` (at `kubernetes_version`, default LWS_KUBERNETES_VERSION, else
    versions.KUBERNETES_VERSION), replacing a stopped or half-dead one of the same name."""
    if is_running(name):
        raise RuntimeError(f"cluster {name!r} is already running; `lws cluster down --name {name}` first")
    bindir = build.ensure_binaries(kubernetes_version)  # refuses an unsupported version first
    down(name)
    cluster = LocalCluster(name, workdir(name), bindir, options)
    cluster.start()
    return cluster


def down(name: str) -> bool:
    """Stop every process of cluster ``name`` and delete its work dir. True if there was one."""
    path = workdir(name)
    if not path.exists():
        return False
    if (path / STATE_FILE).exists():
        stop_state(ClusterState.load(path))
    shutil.rmtree(path, ignore_errors=True)
    return True


def kubeconfig(name: str) -> Path:
    path = workdir(name) / "kubeconfig"
    if not path.exists():
        raise FileNotFoundError(f"no cluster named {name!r}; start one with `lws cluster up --name {name}`")
    return path
