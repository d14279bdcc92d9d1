"""Session-wide local clusters for the test suite (one per xdist worker)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster

STARTED: list[LocalCluster] = []


def start(shape: str, worker: str) -> LocalCluster:
    bindir = build.ensure_binaries()
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-test-{shape}-{worker}-"))
    options = ClusterOptions(
        shape="full" if shape == "full" else "apiserver",
        nodes=int(os.environ.get("LWS_TEST_NODES", "6")),
        die_with_parent=True,
    )
    cluster = LocalCluster(f"test-{shape}-{worker}", workdir, bindir, options)
    cluster.start()
    STARTED.append(cluster)
    return cluster


def stop(cluster: LocalCluster) -> None:
    cluster.stop()
    if cluster in STARTED:
        STARTED.remove(cluster)
    if not os.environ.get("LWS_KEEP_TEST_CLUSTERS"):
        import shutil

        shutil.rmtree(cluster.workdir, ignore_errors=True)
