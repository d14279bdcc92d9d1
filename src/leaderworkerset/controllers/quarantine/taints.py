"""Taint mode of node quarantine: the node patches (the decisions are core/quarantine/taint.py's).

Only nodes the set's state names are read and patched, one GET and at most one JSON patch each,
guarded by the node's resourceVersion (a concurrent change of the node's taints, by the node
lifecycle controller or a user, retries on a fresh read). A refusal by the API server's authorizer
(403: the default install grants no node write) is an outcome, recorded in the state by the caller
and reported by condition and event; it is not retried on every reconcile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import error_text, lws_ref
from leaderworkerset.core.objects import MutableObj, name_of
from leaderworkerset.core.quarantine.taint import REFUSED, TAINTED, taint_patch, untaint_patch
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_not_found, status_code
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import NODES

log = structlog.get_logger(__name__)
# A node's taints changed between our read and our patch this many times in a row: left for the
# next reconcile.
ATTEMPTS = 3
FORBIDDEN = 403
PATCHED, UNCHANGED = "patched", "unchanged"

Patch = Callable[[MutableObj], list[dict[str, Any]] | None]


class NodeTaints:
    def __init__(self, client: KubeClient, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder

    async def taint(self, lws: MutableObj, nodes: list[str]) -> dict[str, str]:
        """Taint `nodes`; each node's outcome (tainted or refused; none for a node gone or an error
        worth another try)."""
        outcomes: dict[str, str] = {}
        for node in nodes:
            result = await self._patch(lws, node, taint_patch)
            if result is not None:
                # Already tainted (by another set, or by us before a restart) counts as ours too: the
                # release leaves it while another set holds it (core/quarantine/taint.py).
                outcomes[node] = REFUSED if result == REFUSED else TAINTED
            if result == PATCHED:
                note = f"Node {node} tainted {ext.TAINT_QUARANTINED}:NoSchedule while it is quarantined"
                self._recorder.normal(lws_ref(lws), ext.EVENT_NODE_TAINTED, c.EVENT_ACTION_UPDATE, note)
        return outcomes

    async def untaint(self, lws: MutableObj, nodes: list[str]) -> None:
        for node in nodes:
            if await self._patch(lws, node, untaint_patch) == PATCHED:
                note = f"Node {node} untainted: its quarantine ended"
                self._recorder.normal(lws_ref(lws), ext.EVENT_NODE_UNTAINTED, c.EVENT_ACTION_UPDATE, note)

    async def _patch(self, lws: MutableObj, node: str, patch_of: Patch) -> str | None:
        for _ in range(ATTEMPTS):
            try:
                current = await self._client.get(NODES, None, node)
                patch = patch_of(current)
                if patch is None:
                    return UNCHANGED
                await self._client.json_patch(NODES, None, node, patch)
                return PATCHED
            except Exception as err:
                if is_not_found(err):
                    return None
                if status_code(err) == FORBIDDEN:
                    log.warning("node patch refused", lws=name_of(lws), node=node, error=error_text(err))
                    return REFUSED
                if status_code(err) not in (409, 422):  # 422: the resourceVersion test failed
                    log.warning("node taint not changed", lws=name_of(lws), node=node, error=error_text(err))
                    return None
        return None
