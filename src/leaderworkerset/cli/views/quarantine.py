"""The quarantined nodes of a LeaderWorkerSet (opt-in node quarantine, docs/node-quarantine.md), as
the group tree of ``lws status NAME`` shows them: each node, until when, and the failures that put
it there. Read from the set's own `leaderworkerset.dev/quarantined-nodes` annotation."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.tree import Tree

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.objects import Obj, annotations_of
from leaderworkerset.core.quarantine.decision import Quarantine, decode_state
from leaderworkerset.core.quarantine.taint import REFUSED, TAINTED


def quarantines(lws: Obj) -> list[Quarantine]:
    return decode_state(annotations_of(lws).get(ext.ANNOTATION_QUARANTINED_NODES))


def _release(quarantine: Quarantine, now: float) -> str:
    left = quarantine.until_seconds() - now
    return (
        f"release due (cool-down ended {quarantine.until})"
        if left <= 0
        else f"until {quarantine.until} (in {left:.0f}s)"
    )


# Taint mode (quarantine-mode: Taint): what became of the node's taint.
_TAINT_NOTES = {TAINTED: "tainted NoSchedule", REFUSED: "taint refused (no node patch permission)"}


def add_branch(root: Tree, lws: Obj, now: float) -> None:
    """A `quarantined nodes` branch under `root`, when the set quarantines any."""
    found = quarantines(lws)
    if not found:
        return
    branch = root.add(f"[red]quarantined nodes: {len(found)}[/red] (new pods of this set avoid them)")
    for q in found:
        taint = f", {_TAINT_NOTES[q.taint]}" if q.taint in _TAINT_NOTES else ""
        node = branch.add(
            f"[red]{escape(q.node)}[/red] {_release(q, now)}, {len(q.failures)} failures since {q.since}"
            f"{taint}"
        )
        for e in q.failures:
            node.add(f"[dim]{e.time} group {escape(e.group)} pod {escape(e.pod)} {escape(e.cause)}[/dim]")


def document(lws: Obj, now: float) -> list[dict[str, Any]]:
    """`-o json`: the quarantined nodes, each with its evidence and the seconds left."""
    return [
        {**q.to_json(), "releaseInSeconds": max(0, round(q.until_seconds() - now))} for q in quarantines(lws)
    ]
