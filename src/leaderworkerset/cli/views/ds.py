"""The role tree of one DisaggregatedSet, as ``lws status NAME`` draws it: DS → roles → revisions →
child LWS → groups → pods.

Each role line shows its ready capacity against its desired total (desired per slice x slices),
each revision whether it is the target, and each child LWS is the same group tree `lws status`
draws for a LeaderWorkerSet. Reads are direct LISTs (a one-shot CLI, not a hot path).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from rich.tree import Tree

from leaderworkerset.api import constants as c
from leaderworkerset.cli.views import lws as lws_view
from leaderworkerset.core.disaggregated.children import owned_children, resolve_targets, status_count
from leaderworkerset.core.disaggregated.naming import revision_of, role_names, role_of, slice_count, slice_of
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.disaggregated.rollout_inputs import during_rollout_policy
from leaderworkerset.core.objects import (
    MutableObj,
    is_controlled_by,
    labels_of,
    lws_replicas,
    metadata,
    name_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, DS_ROLE_SCALERS, LEADERWORKERSETS


@dataclass(frozen=True)
class DSSnapshot:
    ds: MutableObj
    scalers: list[MutableObj]
    children: list[lws_view.Snapshot]


async def collect(client: KubeClient, namespace: str, name: str) -> DSSnapshot | None:
    try:
        ds = await client.get(DISAGGREGATEDSETS, namespace, name)
    except Exception as err:
        if is_not_found(err):
            return None
        raise
    selector = f"{c.LABEL_DS_NAME}={name}"
    listed, scalers = await asyncio.gather(
        client.list(LEADERWORKERSETS, namespace, selector), client.list(DS_ROLE_SCALERS, namespace, selector)
    )
    mine = owned_children(ds, listed)
    found = await asyncio.gather(
        *(lws_view.collect(client, namespace, name_of(lws), events=False) for lws in mine)
    )
    snapshots = [s for s in found if s is not None]
    # One events LIST for every child, not one per child.
    if any(lws_view.has_unscheduled(s.pods) for s in snapshots):
        failures = await lws_view.read_scheduling_failures(client, namespace)
        snapshots = [dataclasses.replace(s, failures=failures) for s in snapshots]
    return DSSnapshot(ds, scalers, snapshots)


def _role_line(role: str, children: list[MutableObj], desired: int | None, slices: int) -> str:
    ready = sum(status_count(lws, "readyReplicas") for lws in children)
    asked = sum(lws_replicas(lws) for lws in children if not metadata(lws).get("deletionTimestamp"))
    if desired is None:
        return f"[bold]role {role}[/bold]  ready {ready}  [red]target unresolved (no scaler)[/red]"
    total = desired * slices
    colour = "green" if ready >= total else "yellow"
    return (
        f"[bold]role {role}[/bold]  ready capacity [{colour}]{ready}/{total}[/{colour}]"
        f"  ({desired} per slice x {slices})  asked {asked}"
    )


def render(snapshot: DSSnapshot) -> Tree:
    ds = snapshot.ds
    meta, status = metadata(ds), ds.get("status") or {}
    target = disaggregated_revision((ds.get("spec") or {}).get("roles") or [])
    slices = slice_count(ds)
    scalers = {labels_of(s).get(c.LABEL_DS_ROLE, ""): s for s in snapshot.scalers if is_controlled_by(s, ds)}
    targets = resolve_targets(ds, scalers)
    conditions = ", ".join(
        f"{cond.get('type')} ({cond.get('reason')})"
        for cond in status.get("conditions") or []
        if cond.get("status") == c.CONDITION_TRUE
    )
    rolling = any(revision_of(child.lws) != target for child in snapshot.children)
    # While a rollout runs, say whether a replica change applies now or after it.
    policy = f"  scaling during rollout: {during_rollout_policy(ds)}" if rolling else ""
    root = Tree(
        f"[bold]DisaggregatedSet {meta.get('namespace')}/{meta.get('name')}[/bold]  revision {target}"
        f"  slices {slices}" + (f"  [cyan]{conditions}[/cyan]" if conditions else "") + policy
    )
    by_role: dict[str, list[lws_view.Snapshot]] = defaultdict(list)
    for child in snapshot.children:
        by_role[role_of(child.lws)].append(child)
    roles = role_names(ds) + sorted(set(by_role) - set(role_names(ds)))  # removed roles still draining
    for role in roles:
        children = by_role.get(role, [])
        branch = root.add(_role_line(role, [s.lws for s in children], targets.get(role), slices))
        revisions: dict[str, list[lws_view.Snapshot]] = defaultdict(list)
        for child in children:
            revisions[revision_of(child.lws)].append(child)
        for revision in sorted(revisions, key=lambda r: (r != target, r)):
            tag = "[green]target[/green]" if revision == target else "[magenta]old, draining[/magenta]"
            rev_branch = branch.add(f"revision {revision}  {tag}")
            for child in sorted(revisions[revision], key=lambda s: slice_of(s.lws) or 0):
                rev_branch.children.append(lws_view.render(child))
        if not children:
            branch.add("[dim]no LeaderWorkerSet yet[/dim]")
    return root


def document(snapshot: DSSnapshot) -> dict[str, Any]:
    """`-o json` of a DisaggregatedSet: its child LeaderWorkerSets, each as `lws status -o json`
    prints one, tagged with role, revision and slice."""
    ds = snapshot.ds
    meta = metadata(ds)
    return {
        "kind": c.DS_KIND,
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "revision": disaggregated_revision((ds.get("spec") or {}).get("roles") or []),
        "scalingDuringRollout": during_rollout_policy(ds),
        "leaderWorkerSets": [
            {
                "role": role_of(child.lws),
                "roleRevision": revision_of(child.lws),
                "slice": slice_of(child.lws),
                **lws_view.document(child),
            }
            for child in snapshot.children
        ],
    }
