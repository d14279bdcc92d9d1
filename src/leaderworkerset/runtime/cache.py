"""The manager's set of informers: declared by controllers during setup, started and synced together."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.codecs import Codec
from leaderworkerset.runtime.listwatch import HttpListerWatcher, ListOptions
from leaderworkerset.runtime.reflector import Informer, ReflectorOptions
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.store import IndexFunc, Store

T = TypeVar("T")


class Cache:
    def __init__(
        self, client: KubeClient, *, clock: Clock | None = None, options: ReflectorOptions | None = None
    ) -> None:
        self._client = client
        self._clock = clock
        self._options = options
        self.informers: dict[str, Informer[object]] = {}

    def informer(
        self,
        ref: ResourceRef,
        codec: Codec[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: dict[str, IndexFunc[T]] | None = None,
        name: str | None = None,
    ) -> Informer[T]:
        """A new informer; filtering happens on the server (namespace, label and field selectors)."""
        informer_name = name or f"{ref.plural}.{ref.group or 'core'}"
        if informer_name in self.informers:
            raise ValueError(f"informer {informer_name!r} already declared; pass a distinct name")
        lister_watcher = HttpListerWatcher(
            self._client.transport, ref, namespace, ListOptions(label_selector, field_selector)
        )
        informer: Informer[T] = Informer(
            informer_name, lister_watcher, Store(codec, indexers), clock=self._clock, options=self._options
        )
        self.informers[informer_name] = informer  # type: ignore[assignment]
        return informer

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers.values())

    async def wait_for_sync(self) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers.values()))

    async def run(self) -> None:
        """Run every informer until cancelled."""
        async with asyncio.TaskGroup() as group:
            for informer in self.informers.values():
                group.create_task(informer.run(), name=f"informer:{informer.name}")
