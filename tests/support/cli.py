"""The `lws` command line as a separate process against a local cluster: the one way tests run it."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from leaderworkerset.devcluster.cluster import LocalCluster


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def lws_argv(cluster: LocalCluster, *args: str) -> list[str]:
    """`python -m leaderworkerset.cli ARGS --kubeconfig <the cluster's>`."""
    return [sys.executable, "-m", "leaderworkerset.cli", *args, "--kubeconfig", str(cluster.kubeconfig)]


async def run_lws(cluster: LocalCluster, *args: str) -> CliResult:
    """Run `lws ARGS` to its end; the exit code and both outputs, whatever the code."""
    proc = await asyncio.create_subprocess_exec(
        *lws_argv(cluster, *args), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())


async def lws_ok(cluster: LocalCluster, *args: str) -> str:
    """Run `lws ARGS`, which must exit 0; its standard output."""
    result = await run_lws(cluster, *args)
    assert result.code == 0, f"lws {' '.join(args)} exited {result.code}: {result.err}"
    return result.out
