"""List+watch one kind into a `Store` and tell event handlers what changed (client-go's informer).

Loop: a streaming list (a watch with `sendInitialEvents=true`: every object arrives as ADDED, then a
bookmark annotated `k8s.io/initial-events-end` carries the list's resourceVersion) → replace the store,
diffing against what it held → keep reading the same watch; on a normal stream end, watch again from
the last seen version; on 410 Gone, list again; on any other failure, back off exponentially and retry.
The cache is synced once the initial events end. When the server refuses the streaming list (the
WatchList feature gate off), the informer uses a paginated LIST (limit/continue) and a watch from the
list's resourceVersion instead, for the rest of its life.

Handlers are synchronous and must be cheap (they enqueue keys); an exception in one is logged and
does not stop the others or the reflector.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import msgspec
import structlog

from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.codecs import ListMeta, ListPage
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.listwatch import ListerWatcher, WatchEvent
from leaderworkerset.runtime.objects import ObjectKey, key_of
from leaderworkerset.runtime.store import Store

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

log = structlog.get_logger(__name__)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


class EventHandler(Protocol[T_contra]):
    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


@dataclass
class FuncHandler(Generic[T]):
    """An EventHandler from plain callables; missing ones do nothing."""

    add: Callable[[T], None] | None = None
    update: Callable[[T, T], None] | None = None
    delete: Callable[[T], None] | None = None

    def on_add(self, obj: T) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: T, new: T) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: T) -> None:
        if self.delete is not None:
            self.delete(obj)


@dataclass(frozen=True)
class ReflectorOptions:
    page_size: int = 500
    # client-go picks a random watch timeout in [5 min, 10 min) so watches do not expire in lockstep.
    min_watch_timeout: int = 300
    initial_backoff: float = 0.8
    max_backoff: float = 30.0
    backoff_reset_after: float = 60.0
    # controller-runtime's default SyncPeriod: every cached object is redelivered as an update this
    # often, so a reconcile that silently missed something converges anyway. None disables it.
    resync_period: float | None = 10 * 3600.0
    # Start with a streaming list (client-go's WatchListClient); False: always a paginated LIST.
    streaming_list: bool = True


class _RVOnly(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815
    name: str = ""
    namespace: str = ""
    annotations: dict[str, str] | None = None


class _Bookmark(msgspec.Struct):
    metadata: _RVOnly


_YIELD_EVERY = 500
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

_EVENT_DECODER = msgspec.json.Decoder(WatchEvent)
_BOOKMARK_DECODER = msgspec.json.Decoder(_Bookmark)
_STATUS_DECODER = msgspec.json.Decoder(ApiStatus)
_RAW_PAGE_DECODER = msgspec.json.Decoder(ListPage[msgspec.Raw])


class Informer(Generic[T]):
    def __init__(
        self,
        name: str,
        lister_watcher: ListerWatcher,
        store: Store[T],
        *,
        clock: Clock | None = None,
        options: ReflectorOptions | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.store = store
        self._lw = lister_watcher
        self._clock: Clock = clock or RealClock()
        self._opts = options or ReflectorOptions()
        self._rng = rng or random.Random()
        self._handlers: list[EventHandler[T]] = []
        self._synced = asyncio.Event()
        self._backoff = self._opts.initial_backoff
        self._last_failure = float("-inf")
        self.lists = 0  # observable counters, useful in tests and logs
        self.watches = 0
        self.streamed_lists = 0
        self._streaming = self._opts.streaming_list

    # ----- public -------------------------------------------------------------------------------
    def add_handler(self, handler: EventHandler[T]) -> None:
        """Register a handler; if the cache already holds objects, it receives them as adds."""
        self._handlers.append(handler)
        for obj in list(self.store):
            self._call(handler.on_add, obj)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        """Run until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._list_and_watch())
            if self._opts.resync_period:
                group.create_task(self._resync_loop(self._opts.resync_period))

    async def _list_and_watch(self) -> None:
        while True:
            try:
                stream = await self._stream_initial_events() if self._streaming else None
                if stream is None:
                    await self._list_and_replace()
                await self._watch_until_expired(stream)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure is retried after backoff
                await self._back_off(exc)

    async def _resync_loop(self, period: float) -> None:
        while True:
            await self._clock.sleep(period)
            if self.has_synced():
                for obj in self.store:
                    self._notify(obj, obj)

    # ----- list -----------------------------------------------------------------------------------
    async def _list_and_replace(self) -> None:
        items: list[T] = []
        continue_token: str | None = None
        resource_version = ""
        while True:
            page_items, meta = self._decode_page(
                await self._lw.list_page(self._opts.page_size, continue_token)
            )
            items.extend(page_items)
            resource_version = meta.resourceVersion or resource_version
            continue_token = meta.continue_
            if not continue_token:
                break
        self.lists += 1
        await self._replace(items, resource_version)
        self._synced.set()

    async def _stream_initial_events(self) -> AsyncGenerator[bytes, None] | None:
        """Sync through a streaming list; the open watch, to read on, or None if the server refused."""
        timeout = self._watch_timeout()
        self.watches += 1
        # "": the objects as of a consistent read now, as after a 410 (a cached version may be gone).
        stream = self._lw.watch("", timeout, initial_events=True)
        items: list[T] = []
        try:
            async for line in stream:
                event = _EVENT_DECODER.decode(line)
                if event.type == BOOKMARK:
                    meta = _BOOKMARK_DECODER.decode(event.object).metadata
                    if (meta.annotations or {}).get(INITIAL_EVENTS_END) != "true":
                        continue  # a progress bookmark: the list's version comes with the last one
                    self.streamed_lists += 1
                    await self._replace(items, meta.resourceVersion)
                    self._synced.set()
                    return stream
                if event.type == ERROR:
                    raise ApiStatusError(_STATUS_DECODER.decode(event.object))
                if (obj := self._decode_object(event.object)) is not None:
                    items.append(obj)
                    if len(items) % _YIELD_EVERY == 0:
                        await asyncio.sleep(0)
            raise ConnectionError("watch ended before its initial events did")
        except ApiStatusError as exc:
            await stream.aclose()
            if not _refusal(exc):
                raise
            log.info("streaming list refused, using paginated lists", informer=self.name, reason=str(exc))
            self._streaming = False
            return None
        except BaseException:
            await stream.aclose()
            raise

    def _decode_page(self, raw: bytes) -> tuple[list[T], ListMeta]:
        """Decode a list page; an item the codec rejects is skipped (and logged), not fatal."""
        try:
            page = self.store.codec.decode_list(raw)
            return list(page.items or ()), page.metadata
        except msgspec.ValidationError:
            raw_page = _RAW_PAGE_DECODER.decode(raw)
        items = [obj for item in raw_page.items or () if (obj := self._decode_object(item)) is not None]
        return items, raw_page.metadata

    def _decode_object(self, raw: msgspec.Raw | bytes) -> T | None:
        try:
            return self.store.codec.decode_object(bytes(raw))
        except msgspec.ValidationError as exc:
            # Retrying cannot help (the server will send the same object again): skip it loudly.
            meta = _BOOKMARK_DECODER.decode(raw).metadata
            log.error("cannot decode object, skipping it", informer=self.name, error=str(exc),
                      name=meta.name, namespace=meta.namespace)  # fmt: skip
            return None

    async def _replace(self, items: list[T], resource_version: str) -> None:
        """Make the store equal to a fresh list, reporting the differences as events."""
        seen: set[ObjectKey] = set()
        for count, obj in enumerate(items, 1):
            key, old = self.store.upsert(obj)
            seen.add(key)
            self._notify(old, obj)
            if count % _YIELD_EVERY == 0:
                # Let webhooks and probes answer while a large list is filed (10k pods ≈ 0.2 s).
                await asyncio.sleep(0)
        for key in set(self.store.keys()) - seen:
            gone = self.store.delete(key)
            if gone is not None:
                self._dispatch_delete(gone)
        self.store.resource_version = resource_version

    # ----- watch ----------------------------------------------------------------------------------
    def _watch_timeout(self) -> int:
        return self._opts.min_watch_timeout + int(self._rng.random() * self._opts.min_watch_timeout)

    async def _watch_until_expired(self, stream: AsyncGenerator[bytes, None] | None = None) -> None:
        """Keep watching (first on `stream`, the streaming list's watch, if given) from the last version;
        return only when a re-list is required."""
        while True:
            if stream is None:
                self.watches += 1
                stream = self._lw.watch(self.store.resource_version, self._watch_timeout())
            try:
                # aclosing: close the stream in this task, also when cancelled mid-event.
                async with contextlib.aclosing(stream) as current:
                    stream = None
                    async for line in current:
                        self._apply_event(line)
                        self._healthy()
            except ApiStatusError as exc:
                if exc.expired:
                    log.info("watch expired, relisting", informer=self.name, reason=exc.status.message)
                    return
                await self._back_off(exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection problems: retry from the same version
                await self._back_off(exc)

    def _apply_event(self, line: bytes) -> None:
        event = _EVENT_DECODER.decode(line)
        if event.type == BOOKMARK:
            self.store.resource_version = _BOOKMARK_DECODER.decode(event.object).metadata.resourceVersion
            return
        if event.type == ERROR:
            raise ApiStatusError(_STATUS_DECODER.decode(event.object))
        obj = self._decode_object(event.object)
        if obj is None:
            self.store.resource_version = _BOOKMARK_DECODER.decode(event.object).metadata.resourceVersion
            return
        meta = self.store.codec.meta(obj)
        if event.type == DELETED:
            # Handlers get the final state the server sent, which is newer than the cached one.
            self.store.delete(key_of(meta))
            self._dispatch_delete(obj)
        else:
            old_obj = self.store.upsert(obj)[1]
            self._notify(old_obj, obj)
        self.store.resource_version = meta.resourceVersion or self.store.resource_version

    # ----- handler dispatch -----------------------------------------------------------------------
    def _notify(self, old: T | None, new: T) -> None:
        for handler in self._handlers:
            if old is None:
                self._call(handler.on_add, new)
            else:
                self._call(handler.on_update, old, new)

    def _dispatch_delete(self, obj: T) -> None:
        for handler in self._handlers:
            self._call(handler.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: object) -> None:
        try:
            fn(*args)
        except Exception:  # a broken handler must not stop the cache
            log.exception("event handler failed", informer=self.name)

    # ----- backoff --------------------------------------------------------------------------------
    def _healthy(self) -> None:
        if self._clock.now() - self._last_failure > self._opts.backoff_reset_after:
            self._backoff = self._opts.initial_backoff

    async def _back_off(self, exc: BaseException) -> None:
        delay = self._backoff
        self._backoff = min(self._backoff * 2, self._opts.max_backoff)
        self._last_failure = self._clock.now()
        log.warning("list/watch failed, retrying", informer=self.name, error=str(exc), retry_in=delay)
        await self._clock.sleep(delay)


def _refusal(error: ApiStatusError) -> bool:
    """A client error that a paginated LIST avoids (422 Invalid for sendInitialEvents with the WatchList
    feature off, 400 from a server that rejects the parameters); not 410, 429 or 5xx, which are retried."""
    return 400 <= error.code < 500 and error.code not in (404, 408, 410, 429)
