"""The failure ledger's writes: one ConfigMap per LeaderWorkerSet, `<lws>-failure-ledger`.

It is created on the LWS's first group recreation (an LWS that never recreates a group gets no
object at all), owned by the LWS (garbage-collected with it) and labelled with its name. Two keys:
`entries` (the bounded history, core/lifecycle/ledger.py) and `backoff` (per-group restart back-off state,
core/lifecycle/backoff.py). Nothing upstream owns is written: neither the LWS nor its pods or StatefulSets
change, so a cluster swaps back to upstream's controller without a restart, and the ConfigMap
just stops growing.

Writes are read-modify-write on a fresh GET with the read's resourceVersion (a conflict re-reads),
like the restart-budget counts. A ConfigMap of that name that this LWS does not control (a user's,
or one left by a deleted namesake that the garbage collector has not removed yet) is never touched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.restartbudget import CONFLICT_BACKOFF_SECONDS, CONFLICT_RETRIES
from leaderworkerset.core.lifecycle.backoff import GroupBackoff
from leaderworkerset.core.lifecycle.ledger import (
    DATA_BACKOFF,
    DATA_ENTRIES,
    LEDGER_CAPACITY,
    LedgerEntry,
    appended,
    decode_backoff,
    decode_entries,
    encode_backoff,
    encode_entries,
    ledger_name,
)
from leaderworkerset.core.objects import MutableObj, controller_owner, name_of, namespace_of, uid_of
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_already_exists, is_conflict
from leaderworkerset.runtime.resources import CONFIGMAPS


class LedgerNotOwnedError(RuntimeError):
    """A ConfigMap with the ledger's name exists but is not controlled by this LWS."""


@dataclass(frozen=True)
class LedgerState:
    entries: list[LedgerEntry] = field(default_factory=list)
    backoff: dict[str, GroupBackoff] = field(default_factory=dict)


def _owned_by(configmap: Mapping[str, Any], lws: Mapping[str, Any]) -> bool:
    owner = controller_owner(configmap)
    return owner is not None and owner.get("kind") == c.LWS_KIND and owner.get("uid") == uid_of(lws)


def state_of(configmap: Mapping[str, Any] | None) -> LedgerState:
    if configmap is None:
        return LedgerState()
    data = configmap.get("data") or {}
    backoff = {
        group: state
        for group, doc in decode_backoff(data).items()
        if (state := GroupBackoff.from_json(doc)) is not None
    }
    return LedgerState(decode_entries(data), backoff)


def new_configmap(lws: Mapping[str, Any]) -> MutableObj:
    name = name_of(lws)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ledger_name(name),
            "namespace": namespace_of(lws),
            "labels": {c.LABEL_SET_NAME: name, ext.LABEL_FAILURE_LEDGER: "true"},
            "ownerReferences": [
                {
                    "apiVersion": c.LWS_API_VERSION,
                    "kind": c.LWS_KIND,
                    "name": name,
                    "uid": uid_of(lws),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {},
    }


class FailureLedger:
    """`record` appends entries (when the ledger is enabled, or the LWS needs them: node quarantine
    counts them) and stores back-off state (always: an LWS that asked for a back-off needs it,
    whatever the manager flag says)."""

    def __init__(self, client: KubeClient, *, enabled: bool = True, capacity: int = LEDGER_CAPACITY) -> None:
        self._client = client
        self.enabled = enabled
        self._capacity = capacity

    async def read(self, lws: Mapping[str, Any]) -> LedgerState:
        configmap = await self._client.get_or_none(CONFIGMAPS, namespace_of(lws), ledger_name(name_of(lws)))
        if configmap is None or not _owned_by(configmap, lws):
            return LedgerState()
        return state_of(configmap)

    async def record(
        self,
        lws: Mapping[str, Any],
        *,
        entry: LedgerEntry | None = None,
        group: str = "",
        backoff: GroupBackoff | None = None,
        keep: bool = False,
    ) -> bool:
        """Append `entry` and set `group`'s back-off state (when given); True when written.

        Raises LedgerNotOwnedError when the name is taken by a ConfigMap this LWS does not control.
        """
        entry = entry if self.enabled or keep else None
        if entry is None and backoff is None:
            return False
        namespace, name = namespace_of(lws), ledger_name(name_of(lws))
        for attempt in range(CONFLICT_RETRIES):
            current = await self._client.get_or_none(CONFIGMAPS, namespace, name)
            if current is not None and not _owned_by(current, lws):
                raise LedgerNotOwnedError(
                    f"configmap {namespace}/{name} is not controlled by this LeaderWorkerSet"
                )
            body = current if current is not None else new_configmap(lws)
            data = dict(body.get("data") or {})
            if entry is not None:
                data[DATA_ENTRIES] = encode_entries(appended(decode_entries(data), entry, self._capacity))
            if backoff is not None:
                states = decode_backoff(data)
                states[group] = backoff.to_json()
                data[DATA_BACKOFF] = encode_backoff(states)
            try:
                if current is None:
                    await self._client.create(CONFIGMAPS, {**body, "data": data})
                else:
                    await self._client.update(CONFIGMAPS, {**current, "data": data})
                return True
            except Exception as err:
                retry = is_conflict(err) or (current is None and is_already_exists(err))
                if not retry or attempt == CONFLICT_RETRIES - 1:
                    raise
            await asyncio.sleep(CONFLICT_BACKOFF_SECONDS)
        return False  # pragma: no cover - the loop either returns or raises
