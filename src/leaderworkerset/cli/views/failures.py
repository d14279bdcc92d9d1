"""``lws status NAME --failures``: the LWS's failure ledger as a table (or ``-o json``), and the
one-line back-off note the group tree shows for a group waiting out its restart back-off.

The ledger is the ConfigMap the pod controller keeps (controllers/group/ledger.py); this module only
renders what one GET of it returns. Pure apart from that read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from leaderworkerset.api import constants as c
from leaderworkerset.core.lifecycle import backoffsource
from leaderworkerset.core.lifecycle.backoff import GroupBackoff, format_seconds
from leaderworkerset.core.lifecycle.ledger import (
    Action,
    LedgerEntry,
    decode_backoff,
    decode_entries,
    ledger_name,
)
from leaderworkerset.core.objects import Obj
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import CONFIGMAPS


async def read_ledger(client: KubeClient, namespace: str, name: str, *, optional: bool = False) -> Obj | None:
    """The ledger ConfigMap (None when the set has none). `optional`: a user who may not read
    ConfigMaps still gets the group tree, only without back-off countdowns."""
    try:
        return await client.get_or_none(CONFIGMAPS, namespace, ledger_name(name))
    except ApiStatusError as err:
        if optional and err.code == 403:
            return None
        raise


def _data(configmap: Obj | None) -> Mapping[str, Any]:
    return (configmap or {}).get("data") or {}


def entries_of(configmap: Obj | None) -> list[LedgerEntry]:
    return decode_entries(_data(configmap))


def backoff_of(configmap: Obj | None) -> dict[str, GroupBackoff]:
    return {
        group: state
        for group, doc in decode_backoff(_data(configmap)).items()
        if (state := GroupBackoff.from_json(doc)) is not None
    }


def backoff_note(configmap: Obj | None, group_key: str, now: float) -> str | None:
    """ "backing off, next recreation in 35s" while the group's recreation waits, else None."""
    state = backoff_of(configmap).get(group_key)
    if state is None or state.waiting_until is None or state.waiting_until <= now:
        return None
    return f"backing off, next recreation in {format_seconds(state.waiting_until - now)}"


def _exit(entry: LedgerEntry) -> str:
    return "" if entry.trigger.exit_code is None else str(entry.trigger.exit_code)


def _what(entry: LedgerEntry) -> str:
    if entry.action is Action.BACKING_OFF and entry.delay_seconds is not None:
        return f"backing off {format_seconds(entry.delay_seconds)}"
    if entry.action is Action.RECREATED and entry.delay_seconds:
        return f"recreated after {format_seconds(entry.delay_seconds)}"
    return str(entry.action)


def table(namespace: str, name: str, configmap: Obj | None, lws: Obj | None = None) -> Table:
    """Newest first: what an operator reads first is what just happened. The caption names the
    restart back-off in force and where it comes from (typed field or annotation)."""
    entries = entries_of(configmap)
    title = f"Failure ledger of LeaderWorkerSet {namespace}/{name}: {len(entries)} entries"
    caption = "\n".join(backoffsource.backoff_notes(lws)) if lws is not None else ""
    grid = Table(
        title=title, title_justify="left", caption=caption or None, caption_justify="left", expand=False
    )
    for column in ("time", "group", "action", "cause", "exit", "pod", "container", "node", "detail"):
        grid.add_column(column, overflow="fold")
    for entry in reversed(entries):
        t = entry.trigger
        grid.add_row(
            entry.time,
            entry.group,
            _what(entry),
            str(t.cause),
            _exit(entry),
            t.pod,
            t.container,
            t.node,
            t.detail,
        )
    return grid


def policy_document(lws: Obj) -> dict[str, Any] | None:
    """The restart back-off in force: its source, base, cap and reset in seconds, and whether an
    annotation is overridden by the field; None when the set asks for none."""
    effective = backoffsource.effective_backoff(lws)
    if effective.source is None:
        return None
    doc: dict[str, Any] = {"source": effective.source, "overriddenAnnotation": effective.overridden}
    if effective.policy is None:
        doc["problem"] = effective.problem
    else:
        p = effective.policy
        doc.update(baseSeconds=p.base, capSeconds=p.cap, resetSeconds=p.reset)
    return doc


def document(
    namespace: str, name: str, configmap: Obj | None, now: float, lws: Obj | None = None
) -> dict[str, Any]:
    """`-o json`: entries oldest first (as stored), the back-off in force and each group's state."""
    policy = policy_document(lws) if lws is not None else None
    return {
        "kind": c.LWS_KIND,
        "namespace": namespace,
        "name": name,
        "failures": [entry.to_json() for entry in entries_of(configmap)],
        **({"restartBackoff": policy} if policy is not None else {}),
        "backoff": {
            group: {
                **({"source": state.source} if state.source else {}),
                "streak": state.streak,
                "waiting": state.waiting_until is not None and state.waiting_until > now,
                "nextRecreationInSeconds": (
                    round(state.waiting_until - now, 3)
                    if state.waiting_until is not None and state.waiting_until > now
                    else None
                ),
            }
            for group, state in sorted(backoff_of(configmap).items())
        },
    }
