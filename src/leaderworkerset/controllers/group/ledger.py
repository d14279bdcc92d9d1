"""The failure ledger's writes: one ConfigMap per LeaderWorkerSet, `<lws>-failure-ledger`.

It is created on the LWS's first group recreation (an LWS that never recreates a group gets no
object at all), owned by the LWS (garbage-collected with it) and labelled with its name. Two keys:
`entries` (the bounded history, core/lifecycle/ledger.py) and `backoff` (per-group restart back-off state,
core/lifecycle/backoff.py). Nothing upstream owns is written: neither the LWS nor its pods or StatefulSets
change, so a cluster swaps back to upstream's controller without a restart, and the ConfigMap
just stops growing.

Writes are read-modify-write guarded by the resourceVersion (a conflict re-reads), like the
restart-budget counts. Two things keep them cheap when many groups fail at once (a
recreation cost a GET and a PUT of the ConfigMap, 1.13x upstream's requests): the read is the
ConfigMap our last write returned (a GET only on the first write, after a conflict or when it is
gone), and records that arrive while a write of the same ledger is in flight are merged into one
next write. A ConfigMap of that name that this LWS does not control (a user's,
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
from leaderworkerset.core.objects import (
    MutableObj,
    is_controlled_by,
    lws_owner_reference,
    name_of,
    namespace_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_already_exists, is_conflict, is_not_found
from leaderworkerset.runtime.resources import CONFIGMAPS

REMEMBERED_LEDGERS = 256


class LedgerNotOwnedError(RuntimeError):
    """A ConfigMap with the ledger's name exists but is not controlled by this LWS."""


@dataclass(frozen=True)
class LedgerState:
    entries: list[LedgerEntry] = field(default_factory=list)
    backoff: dict[str, GroupBackoff] = field(default_factory=dict)


def _owned_by(configmap: Mapping[str, Any], lws: Mapping[str, Any]) -> bool:
    return is_controlled_by(configmap, lws, c.LWS_KIND)


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
            "ownerReferences": [lws_owner_reference(lws)],
        },
        "data": {},
    }


@dataclass
class _Batch:
    """The records waiting for a ledger's next write, and the callers waiting for it."""

    entries: list[LedgerEntry] = field(default_factory=list)
    backoff: dict[str, GroupBackoff] = field(default_factory=dict)
    written: asyncio.Future[None] | None = None


class FailureLedger:
    """`record` appends entries (when the ledger is enabled, or the LWS needs them: node quarantine
    counts them) and stores back-off state (always: an LWS that asked for a back-off needs it,
    whatever the manager flag says)."""

    def __init__(self, client: KubeClient, *, enabled: bool = True, capacity: int = LEDGER_CAPACITY) -> None:
        self._client = client
        self.enabled = enabled
        self._capacity = capacity
        # Per ledger (namespace, name): the ConfigMap our last write returned, and the records
        # waiting for the next write while one is in flight.
        self._written: dict[tuple[str, str], MutableObj] = {}
        self._waiting: dict[tuple[str, str], _Batch] = {}

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
        ledger = (namespace_of(lws), ledger_name(name_of(lws)))
        batch = self._waiting.get(ledger)
        if batch is not None:  # a write is in flight: ride on the next one
            _add(batch, entry, group, backoff)
            if batch.written is None:
                batch.written = asyncio.get_running_loop().create_future()
            await asyncio.shield(batch.written)
            return True
        self._waiting[ledger] = _Batch()
        batch = _add(_Batch(), entry, group, backoff)
        try:
            while True:
                await self._write(lws, ledger, batch)
                if batch.written is not None:
                    batch.written.set_result(None)
                batch = self._waiting[ledger]
                if batch.written is None:
                    break  # nobody joined while that write was in flight
                self._waiting[ledger] = _Batch()
        except BaseException as err:
            # The records merged into the failed write, and those waiting for the next one, fail
            # with it: each caller's own error handling applies (back-off state is retried).
            failure = err if isinstance(err, Exception) else RuntimeError("failure ledger write cancelled")
            for failed in (batch, self._waiting[ledger]):
                if failed.written is not None and not failed.written.done():
                    failed.written.set_exception(failure)
            raise
        finally:
            del self._waiting[ledger]
        return True

    async def _write(self, lws: Mapping[str, Any], ledger: tuple[str, str], batch: _Batch) -> None:
        namespace, name = ledger
        for attempt in range(CONFLICT_RETRIES):
            current = self._written.get(ledger)
            remembered = current is not None and _owned_by(current, lws)
            if not remembered:
                current = await self._client.get_or_none(CONFIGMAPS, namespace, name)
            if current is not None and not _owned_by(current, lws):
                raise LedgerNotOwnedError(
                    f"configmap {namespace}/{name} is not controlled by this LeaderWorkerSet"
                )
            body = current if current is not None else new_configmap(lws)
            data = dict(body.get("data") or {})
            if batch.entries:
                entries = decode_entries(data)
                for entry in batch.entries:
                    entries = appended(entries, entry, self._capacity)
                data[DATA_ENTRIES] = encode_entries(entries)
            if batch.backoff:
                states = decode_backoff(data)
                states.update({group: state.to_json() for group, state in batch.backoff.items()})
                data[DATA_BACKOFF] = encode_backoff(states)
            try:
                if current is None:
                    written = await self._client.create(CONFIGMAPS, {**body, "data": data})
                else:
                    written = await self._client.update(CONFIGMAPS, {**current, "data": data})
                self._remember(ledger, written)
                return
            except Exception as err:
                self._written.pop(ledger, None)
                stale = remembered and is_not_found(err)
                retry = stale or is_conflict(err) or (current is None and is_already_exists(err))
                if not retry or attempt == CONFLICT_RETRIES - 1:
                    raise
            await asyncio.sleep(CONFLICT_BACKOFF_SECONDS)

    def _remember(self, ledger: tuple[str, str], written: MutableObj) -> None:
        """Keep the last write of the most recently written ledgers (a set that is gone leaves
        its entry until newer ones push it out)."""
        self._written.pop(ledger, None)
        self._written[ledger] = written
        if len(self._written) > REMEMBERED_LEDGERS:
            del self._written[next(iter(self._written))]


def _add(batch: _Batch, entry: LedgerEntry | None, group: str, backoff: GroupBackoff | None) -> _Batch:
    if entry is not None:
        batch.entries.append(entry)
    if backoff is not None:
        batch.backoff[group] = backoff
    return batch
