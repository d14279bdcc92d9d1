"""Record every change of the kinds a group is made of, in one namespace, for the whole run.

Started before the first object is created, the recorder lists each kind and then watches it from
the list's resourceVersion, appending one `invariants.Change` per event. It outlives faults of the
API server: a broken stream is resumed from the last version seen; when that version is gone (410
after a restart or an etcd compaction) it lists again and records the difference as ``relisted``
changes, so a gap is never silent (``gaps`` counts them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.listwatch import HttpListerWatcher
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    PODS,
    STATEFULSETS,
    ResourceRef,
)
from tests.chaos.faults import invariants as inv
from tests.chaos.faults import workload
from tests.support.wait import LONG_TIMEOUT, eventually

Obj = dict[str, Any]

KINDS: tuple[tuple[ResourceRef, str], ...] = (
    (LEADERWORKERSETS, inv.LWS),
    (CONTROLLER_REVISIONS, inv.REVISION),
    (STATEFULSETS, inv.STATEFULSET),
    (DEPLOYMENTS, inv.DEPLOYMENT),
    (PODS, inv.POD),
)
RETRY = 0.2


class _ExpiredError(Exception):
    pass


class Recorder:
    def __init__(self, api: KubeClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.changes: list[inv.Change] = []
        self.gaps = 0
        self.resumes = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Recorder:
        for ref, kind in KINDS:
            known: dict[str, Obj] = {}
            # A CRD installed a moment ago answers 429 until its watch cache is filled.
            rv = await eventually(
                workload.transient(lambda: self._relist(ref, kind, known, relisted=False)),  # noqa: B023
                timeout=LONG_TIMEOUT,
            )
            self._tasks.append(asyncio.create_task(self._run(ref, kind, rv, known), name=f"record:{kind}"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            if task.done():
                task.result()  # a broken recorder must fail the run, not check nothing
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def inject_failure(self, rv: int, lws: str, group: str) -> None:
        """Mark an injected failure at the resourceVersion of the write that caused it."""
        self.changes.append(inv.failure(rv, lws, group))

    def snapshot(self) -> list[inv.Change]:
        return inv.ordered(self.changes)

    async def _relist(self, ref: ResourceRef, kind: str, known: dict[str, Obj], *, relisted: bool) -> str:
        """List the kind; record what differs from ``known`` (everything on the first list)."""
        listing = await self.api.request("GET", ref.collection_path(self.namespace))
        rv = str(listing["metadata"]["resourceVersion"])
        current = {obj["metadata"]["name"]: obj for obj in listing.get("items") or []}
        for name, old in list(known.items()):
            new = current.get(name)
            if new is None or new["metadata"]["uid"] != old["metadata"]["uid"]:
                gone = {**old, "metadata": {**old["metadata"], "resourceVersion": rv}}
                self.changes.append(inv.change_of(kind, inv.DELETED, gone, relisted=relisted))
                del known[name]
        for name, obj in current.items():
            old = known.get(name)
            if old is None:
                self.changes.append(inv.change_of(kind, inv.ADDED, _at(obj, rv, relisted), relisted=relisted))
            elif old["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                self.changes.append(
                    inv.change_of(kind, inv.MODIFIED, _at(obj, rv, relisted), relisted=relisted)
                )
            known[name] = obj
        return rv

    async def _run(self, ref: ResourceRef, kind: str, rv: str, known: dict[str, Obj]) -> None:
        watcher = HttpListerWatcher(self.api.transport, ref, self.namespace)
        while True:
            try:
                async for line in watcher.watch(rv, 300):
                    rv = self._apply(kind, json.loads(line), known, rv)
            except asyncio.CancelledError:
                raise
            except (_ExpiredError, ApiStatusError) as err:
                if isinstance(err, ApiStatusError) and not err.expired:
                    await asyncio.sleep(RETRY)
                    continue
                while True:
                    try:
                        rv = await self._relist(ref, kind, known, relisted=True)
                        self.gaps += 1
                        break
                    except Exception:  # the API server is still coming back
                        await asyncio.sleep(RETRY)
            except Exception:  # a broken connection: resume from the last version seen
                self.resumes += 1
                await asyncio.sleep(RETRY)

    def _apply(self, kind: str, event: Obj, known: dict[str, Obj], rv: str) -> str:
        obj = event["object"]
        if event["type"] == "ERROR":
            status = ApiStatus(
                code=obj.get("code", 0), reason=obj.get("reason", ""), message=obj.get("message", "")
            )
            if status.code == 410:
                raise _ExpiredError(status.message)
            raise ApiStatusError(status)
        version = str(obj["metadata"]["resourceVersion"])
        if event["type"] == "BOOKMARK":
            return version
        name = obj["metadata"]["name"]
        self.changes.append(inv.change_of(kind, event["type"], obj))
        if event["type"] == inv.DELETED:
            known.pop(name, None)
        else:
            known[name] = obj
        return version


def _at(obj: Obj, rv: str, relisted: bool) -> Obj:
    """A relisted object is placed at the list's version (when it changed inside the gap is unknown)."""
    if not relisted:
        return obj
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}
