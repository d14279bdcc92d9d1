"""The group tree of one LeaderWorkerSet, as ``lws status NAME`` draws it (and ``lws up`` live).

LWS → groups (leader pod, revision, ready/updated, why not ready) → pods.
Reads are direct LISTs (this is a one-shot CLI, not a controller hot path): per refresh the set,
its pods and StatefulSets, and — only while some pod has no node — one LIST of the namespace's
``FailedScheduling`` pod events. Nothing is written to the cluster. ``document`` is the same
content as one JSON document (``-o json``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape
from rich.tree import Tree

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.cli.views import failures as ledger_view
from leaderworkerset.cli.views import quarantine as quarantine_view
from leaderworkerset.core import objects
from leaderworkerset.core.disruptionbudget.decision import budget_notes
from leaderworkerset.core.groups import state as core_groups
from leaderworkerset.core.groups.state import GroupView
from leaderworkerset.core.lifecycle import backoffsource
from leaderworkerset.core.objects import MutableObj, labels_of
from leaderworkerset.core.observe.diagnosis import Diagnosis, diagnose_group, scheduling_failures
from leaderworkerset.core.rollout.control import rollout_notes
from leaderworkerset.core.rollout.leaderreplacement import emulation_note
from leaderworkerset.core.rollout.surgefallback.decision import surge_notes
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.resources import (
    CORE_EVENTS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    STATEFULSETS,
)


@dataclass(frozen=True)
class Snapshot:
    """Everything the tree shows, read at one moment."""

    lws: MutableObj
    pods: list[MutableObj]
    statefulsets: list[MutableObj]
    leader_deployment: MutableObj | None = None  # Hash identity
    failures: Mapping[str, str] = field(default_factory=dict)  # FailedScheduling message by pod UID
    ledger: Mapping[str, Any] | None = (
        None  # the failure-ledger ConfigMap (back-off state), if the set has one
    )
    now: float = field(default_factory=time.time)  # when it was read (back-off countdowns)
    # A set with a disruption budget: its group budgets and the cordoned nodes (docs/disruption-budgets.md).
    budgets: list[MutableObj] = field(default_factory=list)
    cordoned: frozenset[str] = frozenset()


# The scheduler's failures are all the events the diagnosis needs; the rest is in pod status.
_FAILED_SCHEDULING_SELECTOR = "involvedObject.kind=Pod,reason=FailedScheduling"


async def read_scheduling_failures(client: KubeClient, namespace: str) -> dict[str, str]:
    """One LIST of the namespace's FailedScheduling pod events, reduced to the latest per pod."""
    listing = await client.request(
        "GET", CORE_EVENTS.collection_path(namespace), params={"fieldSelector": _FAILED_SCHEDULING_SELECTOR}
    )
    return scheduling_failures(listing.get("items") or [])


def has_unscheduled(pods: list[MutableObj]) -> bool:
    return any(not (pod.get("spec") or {}).get("nodeName") for pod in pods)


async def collect(client: KubeClient, namespace: str, name: str, *, events: bool = True) -> Snapshot | None:
    """One set's objects; `events=False` leaves the events to a caller that reads them once for
    several sets (a DisaggregatedSet's children)."""
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
    if objects.is_hash(lws):
        deployments = await client.list(DEPLOYMENTS, namespace, selector)
        deployment = next((d for d in deployments if objects.name_of(d) == name), None)
    failures = await read_scheduling_failures(client, namespace) if events and has_unscheduled(pods) else {}
    ledger = await ledger_view.read_ledger(client, namespace, name, optional=True)
    budgets, cordoned = await read_disruption_budget(client, lws)
    return Snapshot(lws, pods, statefulsets, deployment, failures, ledger, budgets=budgets, cordoned=cordoned)


async def read_disruption_budget(
    client: KubeClient, lws: MutableObj
) -> tuple[list[MutableObj], frozenset[str]]:
    """The set's group budgets and the cordoned nodes; nothing is read for a set without a budget."""
    if ext.ANNOTATION_DISRUPTION_BUDGET not in objects.annotations_of(lws):
        return [], frozenset()
    selector = f"{c.LABEL_SET_NAME}={objects.name_of(lws)},{ext.LABEL_GROUP_DISRUPTION_BUDGET}"
    budgets, nodes = await asyncio.gather(
        client.list(PODDISRUPTIONBUDGETS, objects.namespace_of(lws), selector),
        client.list(NODES, field_selector="spec.unschedulable=true"),
    )
    return budgets, frozenset(objects.name_of(node) for node in nodes)


def _restarts(pod: MutableObj) -> int:
    return sum(
        int(s.get("restartCount", 0)) for s in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _role(pod: MutableObj) -> str:
    return "leader" if labels_of(pod).get(c.LABEL_WORKER_INDEX) == "0" else "worker"


def _pod_line(pod: MutableObj) -> str:
    mark = "[green]●[/green]" if core_groups.pod_ready(pod) else "[yellow]○[/yellow]"
    node = (pod.get("spec") or {}).get("nodeName") or "unscheduled"
    restarts = _restarts(pod)
    extra = f" restarts={restarts}" if restarts else ""
    phase = core_groups.pod_phase(pod) or "Pending"
    return f"{mark} {objects.name_of(pod)} [dim]{_role(pod)} {phase} on {node}{extra}[/dim]"


@dataclass(frozen=True)
class Group:
    view: GroupView
    diagnosis: Diagnosis | None  # None when the group is ready
    pods: list[MutableObj]  # leader first, then workers by index
    backoff: str | None = None  # "backing off, next recreation in …" while its recreation waits


@dataclass(frozen=True)
class Overview:
    """The set's header facts and its groups, shared by the tree and the JSON document."""

    name: str
    namespace: str
    replicas: int
    ready_replicas: int
    updated_replicas: int
    size: int
    revision: str
    conditions: list[str]
    groups: list[Group]
    rollout: list[str] = field(default_factory=list)  # rollout-control notes (opt-in annotations)
    disruption: list[str] = field(default_factory=list)  # the disruption budget's state (opt-in)
    # The restart back-off in force, its source (typed field or annotation), an overridden annotation.
    restart_backoff: list[str] = field(default_factory=list)


def overview(snapshot: Snapshot) -> Overview:
    lws = snapshot.lws
    meta, status = objects.metadata(lws), lws.get("status") or {}
    name = str(meta.get("name", ""))
    size = objects.lws_size(lws)
    # The leader workload: the StatefulSet (Ordinal) or the Deployment (Hash) named after the set.
    leader_workload = snapshot.leader_deployment or next(
        (s for s in snapshot.statefulsets if objects.name_of(s) == name), None
    )
    revision = labels_of(leader_workload).get(c.LABEL_TEMPLATE_REVISION_HASH, "?") if leader_workload else "?"
    leaders = [p for p in snapshot.pods if labels_of(p).get(c.LABEL_WORKER_INDEX) == "0"]
    workers_by_sts = {
        objects.name_of(sts): sts for sts in snapshot.statefulsets if objects.name_of(sts) != name
    }
    views = core_groups.describe_groups(
        size=size,
        revision_key=revision,
        leader_pods=leaders,
        worker_statefulsets=workers_by_sts,
        pods=snapshot.pods,
    )
    leader_by_name = {objects.name_of(p): p for p in leaders}
    groups = []
    for view in views:
        members = sorted(
            (p for p in snapshot.pods if labels_of(p).get(c.LABEL_GROUP_INDEX) == view.key),
            key=lambda p: int(labels_of(p).get(c.LABEL_WORKER_INDEX, "0") or 0),
        )
        diagnosis = None
        if not view.ready:
            diagnosis = diagnose_group(
                lws=lws,
                leader=leader_by_name.get(view.leader),
                worker_sts=workers_by_sts.get(view.leader),
                pods=members,
                failures=snapshot.failures,
            )
        backoff = ledger_view.backoff_note(snapshot.ledger, view.key, snapshot.now)
        groups.append(Group(view, diagnosis, members, backoff))
    return Overview(
        name=name,
        namespace=str(meta.get("namespace", "")),
        replicas=objects.lws_replicas(lws),
        ready_replicas=int(status.get("readyReplicas") or 0),
        updated_replicas=int(status.get("updatedReplicas") or 0),
        size=size,
        revision=revision,
        conditions=[
            str(cond.get("type")) for cond in status.get("conditions") or [] if cond.get("status") == "True"
        ],
        groups=groups,
        rollout=[
            *rollout_notes(lws),
            *surge_notes(lws),
            *_emulation(lws, snapshot.leader_deployment, leader_workload),
        ],
        disruption=budget_notes(
            lws, snapshot.pods, snapshot.cordoned, snapshot.budgets, snapshot.leader_deployment
        ),
        restart_backoff=backoffsource.backoff_notes(lws),
    )


def _emulation(lws: MutableObj, deployment: MutableObj | None, leader_sts: MutableObj | None) -> list[str]:
    """The note that this cluster's StatefulSets ignore maxUnavailable (Ordinal sets: a Hash set
    has a leader Deployment and no leader StatefulSet)."""
    note = None if deployment is not None else emulation_note(lws, leader_sts)
    return [] if note is None else [note]


def render(snapshot: Snapshot) -> Tree:
    info = overview(snapshot)
    conditions = ", ".join(info.conditions)
    root = Tree(
        f"[bold]LeaderWorkerSet {info.namespace}/{info.name}[/bold]  "
        f"replicas {info.ready_replicas}/{info.replicas} ready, "
        f"{info.updated_replicas} updated  size {info.size}  revision {info.revision}"
        + (f"  [cyan]{conditions}[/cyan]" if conditions else "")
    )
    for note in info.rollout:
        root.add(f"[yellow]{escape(note)}[/yellow]")
    for note in info.restart_backoff:
        root.add(f"[yellow]{escape(note)}[/yellow]")
    quarantine_view.add_branch(root, snapshot.lws, snapshot.now)
    for note in info.disruption:
        root.add(f"[blue]{escape(note)}[/blue]")
    for group in info.groups:
        view = group.view
        state = "[green]ready[/green]" if view.ready else "[yellow]not ready[/yellow]"
        updated = "" if view.updated else " [magenta](old revision)[/magenta]"
        why = f" — {escape(group.diagnosis.message)}" if group.diagnosis else ""
        if group.backoff:
            why += f" [yellow]({group.backoff})[/yellow]"
        host = f" ({view.hostname})" if view.index < 0 and view.hostname else ""
        branch = root.add(
            f"group {view.name}  {view.leader}{host}  rev {view.revision}  {state}{updated}{why}"
        )
        for pod in group.pods:
            branch.add(_pod_line(pod))
    if not info.groups:
        root.add("[dim]no groups yet[/dim]")
    return root


def document(snapshot: Snapshot) -> dict[str, Any]:
    """`-o json`: the tree's content for tools; `reason` and `cause` are null for a ready group."""
    info = overview(snapshot)
    return {
        "kind": c.LWS_KIND,
        "namespace": info.namespace,
        "name": info.name,
        "replicas": info.replicas,
        "readyReplicas": info.ready_replicas,
        "updatedReplicas": info.updated_replicas,
        "size": info.size,
        "revision": info.revision,
        "conditions": info.conditions,
        **({"rollout": info.rollout} if info.rollout else {}),
        **({"quarantinedNodes": q} if (q := quarantine_view.document(snapshot.lws, snapshot.now)) else {}),
        **({"disruptionBudget": info.disruption} if info.disruption else {}),
        **({"restartBackoff": info.restart_backoff} if info.restart_backoff else {}),
        "groups": [
            {
                "name": group.view.name,
                "index": group.view.index if group.view.index >= 0 else None,
                "key": group.view.key,
                "leader": group.view.leader,
                "revision": group.view.revision,
                "ready": group.view.ready,
                "updated": group.view.updated,
                "cause": group.diagnosis.cause if group.diagnosis else None,
                "reason": group.diagnosis.message if group.diagnosis else None,
                "backoff": group.backoff,
                "pods": [
                    {
                        "name": objects.name_of(pod),
                        "role": _role(pod),
                        "phase": core_groups.pod_phase(pod) or "Pending",
                        "node": (pod.get("spec") or {}).get("nodeName") or None,
                        "ready": core_groups.pod_ready(pod),
                        "restarts": _restarts(pod),
                    }
                    for pod in group.pods
                ],
            }
            for group in info.groups
        ],
    }
