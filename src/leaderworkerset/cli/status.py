"""``lws status NAME``: the group tree of one LeaderWorkerSet (or, by that name, of a
DisaggregatedSet: see ``ds_status``).

LWS → groups (leader pod, revision, ready/updated, why not ready) → pods.
The same rendering backs the live view of ``lws up``. Reads are direct LISTs
(this is a one-shot CLI, not a controller hot path).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.tree import Tree

from leaderworkerset.api import constants as c
from leaderworkerset.core import groups as core_groups
from leaderworkerset.core.groups import labels_of
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.resources import DEPLOYMENTS, LEADERWORKERSETS, PODS, STATEFULSETS

Obj = dict[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """Everything the tree shows, read at one moment."""

    lws: Obj
    pods: list[Obj]
    statefulsets: list[Obj]
    leader_deployment: Obj | None = None  # Hash identity


async def collect(client: KubeClient, namespace: str, name: str) -> Snapshot | None:
    try:
        lws = await client.get(LEADERWORKERSETS, namespace, name)
    except Exception as err:
        if is_not_found(err):
            return None
        raise
    selector = f"{c.LABEL_SET_NAME}={name}"
    pods, statefulsets = await asyncio.gather(
        client.list(PODS, namespace, selector), client.list(STATEFULSETS, namespace, selector)
    )
    deployment = None
    if (lws.get("spec") or {}).get("groupIdentity") == c.GROUP_IDENTITY_HASH:
        deployments = await client.list(DEPLOYMENTS, namespace, selector)
        deployment = next((d for d in deployments if core_groups.name_of(d) == name), None)
    return Snapshot(lws, pods, statefulsets, deployment)


def _pod_line(pod: Obj) -> str:
    status = pod.get("status") or {}
    ready = core_groups.pod_ready(pod)
    mark = "[green]●[/green]" if ready else "[yellow]○[/yellow]"
    node = (pod.get("spec") or {}).get("nodeName") or "unscheduled"
    restarts = sum(int(s.get("restartCount", 0)) for s in status.get("containerStatuses") or [])
    extra = f" restarts={restarts}" if restarts else ""
    role = "leader" if labels_of(pod).get(c.LABEL_WORKER_INDEX) == "0" else "worker"
    phase = status.get("phase", "Pending")
    return f"{mark} {core_groups.name_of(pod)} [dim]{role} {phase} on {node}{extra}[/dim]"


def render(snapshot: Snapshot) -> Tree:
    lws = snapshot.lws
    meta, spec, status = core_groups.metadata(lws), lws.get("spec") or {}, lws.get("status") or {}
    name = meta.get("name", "")
    size = core_groups.lws_size(lws)
    # The leader workload: the StatefulSet (Ordinal) or the Deployment (Hash) named after the set.
    leader_workload = snapshot.leader_deployment or next(
        (s for s in snapshot.statefulsets if core_groups.name_of(s) == name), None
    )
    revision = labels_of(leader_workload).get(c.LABEL_TEMPLATE_REVISION_HASH, "?") if leader_workload else "?"
    conditions = ", ".join(
        f"{cond.get('type')}" for cond in status.get("conditions") or [] if cond.get("status") == "True"
    )
    root = Tree(
        f"[bold]LeaderWorkerSet {meta.get('namespace')}/{name}[/bold]  "
        f"replicas {status.get('readyReplicas', 0)}/{spec.get('replicas', 1)} ready, "
        f"{status.get('updatedReplicas', 0)} updated  size {size}  revision {revision}"
        + (f"  [cyan]{conditions}[/cyan]" if conditions else "")
    )
    leaders = [p for p in snapshot.pods if labels_of(p).get(c.LABEL_WORKER_INDEX) == "0"]
    workers_by_sts = {
        core_groups.name_of(sts): sts for sts in snapshot.statefulsets if core_groups.name_of(sts) != name
    }
    views = core_groups.describe_groups(
        size=size, revision_key=revision, leader_pods=leaders, worker_statefulsets=workers_by_sts
    )
    for view in views:
        state = "[green]ready[/green]" if view.ready else "[yellow]not ready[/yellow]"
        updated = "" if view.updated else " [magenta](old revision)[/magenta]"
        why = f" — {'; '.join(view.reasons)}" if view.reasons else ""
        host = f" ({view.hostname})" if view.index < 0 and view.hostname else ""
        branch = root.add(
            f"group {view.name}  {view.leader}{host}  rev {view.revision}  {state}{updated}{why}"
        )
        members = [p for p in snapshot.pods if labels_of(p).get(c.LABEL_GROUP_INDEX) == view.key]
        for pod in sorted(members, key=lambda p: int(labels_of(p).get(c.LABEL_WORKER_INDEX, "0") or 0)):
            branch.add(_pod_line(pod))
    if not views:
        root.add("[dim]no groups yet[/dim]")
    return root


async def tree_of(client: KubeClient, namespace: str, name: str) -> Tree | None:
    """The LeaderWorkerSet's group tree, else the DisaggregatedSet's role tree, else None."""
    from leaderworkerset.cli import ds_status

    snapshot = await collect(client, namespace, name)
    if snapshot is not None:
        return render(snapshot)
    ds_snapshot = await ds_status.collect(client, namespace, name)
    return None if ds_snapshot is None else ds_status.render(ds_snapshot)


async def show(options: ClientOptions, namespace: str, name: str, watch: bool, interval: float = 1.0) -> int:
    client = new_client(options)
    console = Console()
    try:
        tree = await tree_of(client, namespace, name)
        if tree is None:
            console.print(f"[red]no LeaderWorkerSet or DisaggregatedSet {namespace}/{name}[/red]")
            return 1
        if not watch:
            console.print(tree)
            return 0
        with Live(tree, console=console, refresh_per_second=4) as live:
            while True:
                await asyncio.sleep(interval)
                tree = await tree_of(client, namespace, name)
                if tree is not None:
                    live.update(tree)
    finally:
        await client.close()


def status(
    name: Annotated[str, typer.Argument(help="LeaderWorkerSet or DisaggregatedSet name.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n")] = "default",
    kubeconfig: Annotated[str | None, typer.Option(help="Kubeconfig path (default: $KUBECONFIG).")] = None,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Keep the tree live until Ctrl-C.")] = False,
) -> None:
    """Show LeaderWorkerSet → groups → pods with revision, readiness and why a group is not ready;
    for a DisaggregatedSet: roles (ready capacity) → revisions → child LWS → groups → pods."""
    try:
        code = asyncio.run(show(ClientOptions(kubeconfig=kubeconfig), namespace, name, watch))
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)
