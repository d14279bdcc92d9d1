"""``lws up``: the demo in one command.

Starts the full local cluster (building it on first use), installs the CRDs,
runs ``lws manager`` (controllers + webhooks) as a separate process attached to
the cluster, applies a sample LeaderWorkerSet of 3 groups x 4 pods, and shows
the live group tree until Ctrl-C, which stops everything. ``--detach`` leaves
it all running and prints the kubeconfig; ``lws cluster down`` stops it later.
"""

from __future__ import annotations

import asyncio
import sys
import time
import urllib.request
from importlib import resources
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console

from leaderworkerset.api import constants as c
from leaderworkerset.cli import status as status_cmd
from leaderworkerset.cli.cluster import ImagesOpt, VersionOpt, image_names, resolved_version
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, named
from leaderworkerset.devcluster.cluster import ClusterError, ClusterOptions, LocalCluster, free_port
from leaderworkerset.devcluster.processes import wait_for
from leaderworkerset.devcluster.realnodes import binaries, workloads
from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS

MANAGER = "lws-manager"
_console = Console(stderr=True)


def sample(real_nodes: bool = False) -> dict[str, Any]:
    file = "demo-lws-real-nodes.yaml" if real_nodes else "demo-lws.yaml"
    text = (resources.files("leaderworkerset.cli") / "samples" / file).read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


async def _install(cluster: LocalCluster) -> None:
    client = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig)))
    try:
        await install_crds(client.lightkube)
    finally:
        await client.close()


async def _apply_sample(cluster: LocalCluster, lws: dict[str, Any]) -> None:
    client = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig)))
    try:
        await client.apply(LEADERWORKERSETS, lws)
    finally:
        await client.close()


def start_manager(cluster: LocalCluster) -> int:
    """Run `lws manager` against the cluster; return its health port once it is ready."""
    health = free_port()
    argv = [
        sys.executable,
        "-m",
        "leaderworkerset.cli",
        "manager",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--namespace",
        c.DEFAULT_NAMESPACE,
        "--webhook-url-host",
        "127.0.0.1",
        "--webhook-port",
        str(free_port()),
        "--cert-dir",
        str(cluster.workdir / "webhook-certs"),
        "--health-probe-bind-address",
        f"127.0.0.1:{health}",
        "--metrics-bind-address",
        f"127.0.0.1:{free_port()}",
        "--insecure-metrics",
        "--log-json",
    ]
    proc = cluster.attach(MANAGER, argv)

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)

    def dead() -> str | None:
        return f"{MANAGER} (exit code {proc.returncode})" if proc.poll() is not None else None

    wait_for("lws manager readiness", ready, timeout=120, alive=dead)
    return health


class _Steps:
    """Numbered progress lines with the time each step took."""

    def __init__(self) -> None:
        self._started: float | None = None

    def __call__(self, title: str) -> None:
        self.done()
        _console.print(f"[bold cyan]▶[/bold cyan] {title}", soft_wrap=True)
        self._started = time.monotonic()

    def done(self) -> None:
        if self._started is not None:
            _console.print(f"  [dim]done in {time.monotonic() - self._started:.1f}s[/dim]")
            self._started = None


def up(
    name: Annotated[str, typer.Option("--name", help="Cluster name.")] = named.DEFAULT_NAME,
    nodes: Annotated[int, typer.Option(help="Fake nodes.")] = 4,
    detach: Annotated[bool, typer.Option("--detach", help="Leave everything running and exit.")] = False,
    kubernetes_version: VersionOpt = None,
    real_nodes: Annotated[
        int,
        typer.Option(
            help="Run the demo on N real nodes (root; kubelet + containerd, docs/real-nodes.md) with the "
            "probe workload, whose groups are Ready only once their workers reached the leader."
        ),
    ] = 0,
    images: ImagesOpt = "",
) -> None:
    """Start the demo: a full local cluster with the controller and a sample LeaderWorkerSet."""
    version = resolved_version(kubernetes_version)
    workload_images = image_names(images, real_nodes)
    lws = sample(real_nodes=real_nodes > 0)
    _step = _Steps()
    try:
        if real_nodes:
            binaries.require_available(version)  # before anything is stopped, built or started
        if named.is_running(name):
            named.down(name)
        _step(
            f"Starting the local cluster, Kubernetes {version} (etcd, kube-apiserver, controller-manager, "
            + (f"scheduler, {real_nodes} real nodes)" if real_nodes else "scheduler, kwok)")
        )
        options = ClusterOptions(
            shape="full",
            nodes=0 if real_nodes else nodes,
            real_nodes=real_nodes,
            node_images=tuple(workloads.ensure_archive(name) for name in workload_images),
        )
        cluster = named.up(name, options, version)
        _step("Installing the CRDs")
        asyncio.run(_install(cluster))
        _step("Starting `lws manager` (controllers and admission webhooks)")
        start_manager(cluster)
        _step(f"Applying LeaderWorkerSet {lws['metadata']['name']} (3 groups x 4 pods)")
        asyncio.run(_apply_sample(cluster, lws))
        _step.done()
    except (ClusterError, build.BuildError, RuntimeError, TimeoutError, OSError) as err:
        typer.echo(f"error: {err}", err=True)
        if "cluster" in locals():
            typer.echo(cluster.log_report(15), err=True)
            named.down(name)
        raise typer.Exit(1) from err

    lws_name, namespace = lws["metadata"]["name"], lws["metadata"].get("namespace", "default")
    _console.print(
        f"\nKUBECONFIG={cluster.kubeconfig}\n"
        f"kubectl: {cluster.kubectl}\n"
        f"logs: {cluster.logdir} (components and {MANAGER}.log)\n"
        f"tree: lws status {lws_name} --kubeconfig {cluster.kubeconfig} --watch\n",
        soft_wrap=True,
    )
    if detach:
        flag = "" if name == named.DEFAULT_NAME else f" --name {name}"
        _console.print(f"Left running; stop with `lws cluster down{flag}`.")
        typer.echo(str(cluster.kubeconfig))
        return
    _console.print("Live group tree (Ctrl-C stops the demo and the cluster):")
    try:
        asyncio.run(
            status_cmd.show(ClientOptions(kubeconfig=str(cluster.kubeconfig)), namespace, lws_name, True)
        )
    except KeyboardInterrupt:
        pass
    finally:
        named.down(name)
        _console.print(f"cluster {name!r} stopped")
