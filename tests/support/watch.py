"""Every change of one kind in a namespace, from a consistent list on: for tests that must see every
intermediate state (a surge peak, the ready groups during a rollout) instead of sampling."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.listwatch import HttpListerWatcher
from leaderworkerset.runtime.resources import ResourceRef

Obj = dict[str, Any]


class Watch:
    """Every change of one kind in a namespace, in resourceVersion order, from a consistent list on.

    ``observe(objects)`` is called with the current objects (by name) after the list and after
    each event, so it sees every state the API server went through — nothing is sampled.
    """

    def __init__(self, api: KubeClient, ref: ResourceRef, ns: str, observe: Callable[[dict[str, Obj]], None]):
        self.api, self.ref, self.ns, self.observe = api, ref, ns, observe
        self.objects: dict[str, Obj] = {}
        self.added: list[Obj] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Watch:
        listing = await self.api.request("GET", self.ref.collection_path(self.ns))
        self.objects = {obj["metadata"]["name"]: obj for obj in listing.get("items") or []}
        self.added = list(self.objects.values())
        self.observe(self.objects)
        self._task = asyncio.create_task(self._run(listing["metadata"]["resourceVersion"]))
        return self

    async def _run(self, resource_version: str) -> None:
        watcher = HttpListerWatcher(self.api.transport, self.ref, self.ns)
        while True:
            async for line in watcher.watch(resource_version, 300):
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":
                    raise RuntimeError(f"watch {self.ref.kind}: {obj}")
                resource_version = obj["metadata"]["resourceVersion"]
                if event["type"] == "BOOKMARK":
                    continue
                name = obj["metadata"]["name"]
                if event["type"] == "DELETED":
                    self.objects.pop(name, None)
                else:
                    if event["type"] == "ADDED":
                        self.added.append(obj)
                    self.objects[name] = obj
                self.observe(self.objects)

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        if self._task.done():
            self._task.result()  # surface a broken watch instead of silently checking nothing
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
