"""The `lws` and `kubectl` command lines as separate processes against a local cluster: the one way
tests run them."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from leaderworkerset.devcluster.cluster import LocalCluster


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


async def run(argv: list[str], stdin: str | None = None) -> CliResult:
    """Run `argv` to its end (with `stdin` as its input, if given); the exit code and both outputs."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=None if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(None if stdin is None else stdin.encode())
    assert proc.returncode is not None
    return CliResult(proc.returncode, out.decode(), err.decode())


def lws_argv(cluster: LocalCluster, *args: str) -> list[str]:
    """`python -m leaderworkerset.cli ARGS --kubeconfig <the cluster's>`."""
    return [sys.executable, "-m", "leaderworkerset.cli", *args, "--kubeconfig", str(cluster.kubeconfig)]


async def run_lws(cluster: LocalCluster, *args: str) -> CliResult:
    """Run `lws ARGS` to its end; the exit code and both outputs, whatever the code."""
    return await run(lws_argv(cluster, *args))


async def lws_ok(cluster: LocalCluster, *args: str) -> str:
    """Run `lws ARGS`, which must exit 0; its standard output."""
    result = await run_lws(cluster, *args)
    assert result.code == 0, f"lws {' '.join(args)} exited {result.code}: {result.err}"
    return result.out


def kubectl_argv(binary: Path, kubeconfig: Path, *args: str) -> list[str]:
    return [str(binary), "--kubeconfig", str(kubeconfig), *args]


async def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    """Run `kubectl ARGS` with the cluster's admin kubeconfig (and `stdin` as its input, if given),
    which must exit 0; its standard output."""
    result = await run(kubectl_argv(cluster.kubectl, cluster.kubeconfig, *args), stdin=stdin)
    assert result.code == 0, f"kubectl {' '.join(args)}: {result.err}"
    return result.out
