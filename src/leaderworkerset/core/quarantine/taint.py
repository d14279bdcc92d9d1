"""Taint mode of node quarantine (`leaderworkerset.dev/quarantine-mode: Taint`): a quarantined node
also gets the taint `leaderworkerset.dev/quarantined-for-failing-groups:NoSchedule`, so nothing new
is scheduled there, not only this set's pods (which keep their affinity term besides, so a refused or
removed taint still leaves them off the node).

Whether a node was tainted is recorded in the set's quarantine state (`Quarantine.taint`), so:

* a node is tainted once per quarantine (`to_taint`), and a refusal (the manager may not patch
  nodes: the default install) is recorded and reported, not retried on every reconcile;
* at the end of a cool-down only nodes this set tainted are untainted (`to_untaint`), and only when
  no other set still holds the node tainted; only our key is removed, never another taint.

Pure: the controller (controllers/quarantine/taints.py) does the node reads and patches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.objects import Obj, annotations_of, metadata
from leaderworkerset.core.quarantine.decision import Quarantine, decode_state
from leaderworkerset.core.quarantine.policy import quarantine_taints

TAINTED = "tainted"
REFUSED = "refused"
NO_SCHEDULE = "NoSchedule"


def quarantine_taint() -> dict[str, str]:
    return {"key": ext.TAINT_QUARANTINED, "effect": NO_SCHEDULE}


def _ours(taint: Obj) -> bool:
    return taint.get("key") == ext.TAINT_QUARANTINED and taint.get("effect") == NO_SCHEDULE


def _taints(node: Obj) -> list[dict[str, Any]]:
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or []]


def taint_patch(node: Obj) -> list[dict[str, Any]] | None:
    """JSON patch adding our taint (guarded by the node's resourceVersion); None: it is there."""
    taints = _taints(node)
    if any(_ours(t) for t in taints):
        return None
    guard = {
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": metadata(node).get("resourceVersion"),
    }
    return [
        guard,
        {
            "op": "replace" if taints else "add",
            "path": "/spec/taints",
            "value": [*taints, quarantine_taint()],
        },
    ]


def untaint_patch(node: Obj) -> list[dict[str, Any]] | None:
    """JSON patch removing our taint and only ours; None when the node does not have it."""
    taints = _taints(node)
    kept = [t for t in taints if not _ours(t)]
    if len(kept) == len(taints):
        return None
    guard = {
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": metadata(node).get("resourceVersion"),
    }
    change = (
        {"op": "replace", "path": "/spec/taints", "value": kept}
        if kept
        else {"op": "remove", "path": "/spec/taints"}
    )
    return [guard, change]


def to_taint(lws: Obj, state: Sequence[Quarantine]) -> list[str]:
    """The set's quarantined nodes not tried yet, when it asks for taints."""
    return [q.node for q in state if not q.taint] if quarantine_taints(lws) else []


def tainted_elsewhere(sets: Iterable[Obj], this: tuple[str, str], now: float) -> frozenset[str]:
    """Nodes another set holds tainted under a quarantine still in force."""
    held: set[str] = set()
    for other in sets:
        meta = metadata(other)
        if (str(meta.get("namespace") or ""), str(meta.get("name") or "")) == this:
            continue
        raw = annotations_of(other).get(ext.ANNOTATION_QUARANTINED_NODES)
        held.update(q.node for q in decode_state(raw) if q.taint == TAINTED and q.until_seconds() > now)
    return frozenset(held)


def to_untaint(released: Iterable[Quarantine], held_elsewhere: frozenset[str]) -> list[str]:
    """The released nodes this set tainted, that no other set still holds tainted."""
    return sorted(q.node for q in released if q.taint == TAINTED and q.node not in held_elsewhere)


def with_outcomes(state: Sequence[Quarantine], outcomes: dict[str, str]) -> list[Quarantine]:
    """The state with each tried node's outcome recorded."""
    return [Quarantine(q.node, q.since, q.until, q.failures, outcomes.get(q.node, q.taint)) for q in state]


def refusal_message(lws: Obj) -> str | None:
    """What the QuarantineTaintRefused condition says (None: nothing refused, or no taint mode)."""
    if not quarantine_taints(lws):
        return None
    state = decode_state(annotations_of(lws).get(ext.ANNOTATION_QUARANTINED_NODES))
    refused = sorted(q.node for q in state if q.taint == REFUSED)
    if not refused:
        return None
    return (
        f"Node(s) {', '.join(refused)} not tainted: the manager may not patch nodes (install with "
        "quarantineTaints.enabled); new pods of this set still avoid them by node affinity"
    )
