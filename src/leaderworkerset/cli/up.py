"""``lws up``: the demo — a full local cluster, ready to use, in one command."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from leaderworkerset.devcluster import build, named
from leaderworkerset.devcluster.cluster import ClusterError, ClusterOptions, LocalCluster


def _usage(cluster: LocalCluster, name: str) -> str:
    kubectl = cluster.kubectl
    return (
        f"\nLocal cluster {name!r} is up ({len(cluster.options.node_specs or []) or cluster.options.nodes} "
        f"fake nodes).\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  {kubectl} get nodes\n"
        f"Component logs: {cluster.logdir}\n"
    )


def up(
    name: Annotated[str, typer.Option("--name", help="Cluster name.")] = named.DEFAULT_NAME,
    nodes: Annotated[int, typer.Option(help="Fake nodes.")] = 4,
    detach: Annotated[bool, typer.Option("--detach", help="Leave everything running and exit.")] = False,
) -> None:
    """Start the demo: a full local cluster with the controller and a sample LeaderWorkerSet."""
    try:
        if named.is_running(name):
            named.down(name)
        cluster = named.up(name, ClusterOptions(shape="full", nodes=nodes))
    except (ClusterError, build.BuildError, RuntimeError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from err
    typer.echo(_usage(cluster, name), err=True)
    if detach:
        typer.echo(str(cluster.kubeconfig))
        return
    typer.echo("Press Ctrl-C to stop the cluster.", err=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        named.down(name)
        typer.echo(f"cluster {name!r} stopped", err=True)
