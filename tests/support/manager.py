"""`lws manager` as a separate process against a local cluster, as the e2e tests run it.

The manager runs like `lws up` runs it (controllers + admission webhooks registered as URL
configurations on 127.0.0.1, no leader election), with ports and cert dir fixed at construction so
that a restart serves the webhook configurations it left behind:

    manager = ManagerProcess(cluster)
    await manager.start()      # returns once /readyz answers 200
    manager.kill()             # SIGKILL: no graceful shutdown, as a crashed pod
    await manager.start()      # the same ports, the same cert dir
    await manager.stop()       # SIGTERM, then SIGKILL after a grace period
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster, free_port
from tests.support import image
from tests.support.wait import LONG_TIMEOUT, eventually


class ManagerProcess:
    def __init__(
        self,
        cluster: LocalCluster,
        name: str = "lws-manager-e2e",
        config: Path | None = None,
        *,
        kubeconfig: Path | None = None,
        leader_elect: bool = False,
        secure_metrics: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        """``config`` is a Configuration file (`--config`), e.g. to turn on a scheduler provider;
        ``kubeconfig`` other than the cluster's admin one runs the manager as someone else (e.g.
        its ServiceAccount's token); ``secure_metrics`` serves /metrics over HTTPS with authn/authz."""
        self.cluster = cluster
        self.name = name
        self.config = config
        self.kubeconfig = kubeconfig or cluster.kubeconfig
        self.leader_elect = leader_elect
        self.secure_metrics = secure_metrics
        self.extra_args = extra_args
        self.webhook_port = free_port()
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.cert_dir = cluster.workdir / f"{name}-certs"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def python(self) -> list[str]:
        """The interpreter as the image runs it: with the image's PYTHONOPTIMIZE (hack/image-contract.toml),
        so every test and benchmark runs the manager's code as a pod does."""
        return [sys.executable, *image.python_flags()]

    @property
    def argv(self) -> list[str]:
        return [
            *self.python,
            "-m",
            "leaderworkerset.cli",
            "manager",
            "--kubeconfig",
            str(self.kubeconfig),
            "--namespace",
            c.DEFAULT_NAMESPACE,
            "--leader-elect" if self.leader_elect else "--no-leader-elect",
            "--webhook-url-host",
            "127.0.0.1",
            "--webhook-port",
            str(self.webhook_port),
            "--cert-dir",
            str(self.cert_dir),
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            *(() if self.secure_metrics else ("--insecure-metrics",)),
            "--log-json",
            *(["--config", str(self.config)] if self.config else []),
            *self.extra_args,
        ]

    def log_text(self) -> str:
        """The whole log of every start of this manager."""
        return (self.cluster.logdir / f"{self.name}.log").read_text(errors="replace")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "manager not started"
        return self.proc.pid

    def log_tail(self, lines: int = 40) -> str:
        return self.cluster.log_tail(self.name, lines)

    def _ready(self) -> bool:
        if not self.running:
            raise RuntimeError(
                f"{self.name} exited with {self.proc.returncode if self.proc else None}:\n{self.log_tail()}"
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError) as err:
            raise AssertionError(f"/readyz: {err}") from err

    def scrape(self) -> str:
        """The text exposition of its /metrics (plain HTTP: not started with ``secure_metrics``)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return str(resp.read().decode())

    async def start(self) -> None:
        """Spawn the manager (logs in the cluster's log dir) and wait until it reports ready."""
        assert not self.running, f"{self.name} is already running (pid {self.pid})"
        self.proc = self.cluster.attach(self.name, self.argv)
        self.starts += 1
        await eventually(
            lambda: asyncio.to_thread(self._ready), timeout=LONG_TIMEOUT, interval=0.2, message=self.name
        )

    def kill(self) -> None:
        """SIGKILL, as the kubelet does to a crashed or OOM-killed container: nothing is flushed."""
        assert self.proc is not None, f"{self.name} was never started"
        assert self.running, f"{self.name} is not running"
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    async def stop(self, grace: float = 15.0) -> None:
        if not self.running or self.proc is None:
            return
        self.proc.terminate()
        try:
            await asyncio.to_thread(self.proc.wait, grace)
        except subprocess.TimeoutExpired:
            self.kill()


class UpstreamControllers(ManagerProcess):
    """Upstream's Go manager (tools.UPSTREAM_LWS) as a process: controllers only (webhooks off, so ours
    admit for it), no leader election, plain probes: the other side of a swap or a comparison."""

    def __init__(self, cluster: LocalCluster, binary: Path, name: str) -> None:
        super().__init__(cluster, name)
        self.binary = binary
        self.config = cluster.workdir / f"{name}.yaml"
        self.config.write_text(
            "apiVersion: config.lws.x-k8s.io/v1alpha1\nkind: Configuration\n"
            "leaderElection:\n  leaderElect: false\ninternalCertManagement:\n  enable: false\n"
        )

    @property
    def argv(self) -> list[str]:
        return [
            "env",
            f"{c.ENV_ENABLE_WEBHOOKS}=false",
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--config={self.config}",
            "--leader-elect=false",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            "--zap-devel=false",
        ]
