"""An events.k8s.io/v1 event recorder that never blocks a reconcile.

`record()` is synchronous: it queues the event on a bounded in-memory queue and returns. A writer task
(`run()`, started by the manager) creates the Event objects. When the queue is full, events are dropped
and counted, like client-go's broadcaster, because losing an event is better than stalling a
controller.

Repeats are folded into an EventSeries the way client-go's events library does: the first occurrence
creates an Event; the first identical repeat (same regarding object, type, reason, action, note and
reporter) within the series window patches `series` (count 2) onto that Event; later repeats only
count in memory and are written by the periodic series refresh, so an event storm costs two API
calls per distinct event, not one per occurrence. Series unseen for 6 minutes are finished.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.resources import EVENTS

log = structlog.get_logger(__name__)

SERIES_WINDOW = 6 * 60.0  # client-go's finishTime: a series unseen this long is over
SERIES_REFRESH = 30 * 60.0  # client-go's refreshTime: how often pending series counts are written
MAX_NOTE_LENGTH = 1024  # the API server rejects longer notes
DEFAULT_QUEUE_SIZE = 1000


class ObjectReference(msgspec.Struct, omit_defaults=True, frozen=True):
    apiVersion: str = ""  # noqa: N815
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resourceVersion: str = ""  # noqa: N815


def object_ref(obj: Any, *, api_version: str | None = None, kind: str | None = None) -> ObjectReference:
    """Reference to a cached object (dict or projection); projections need api_version/kind given."""
    if isinstance(obj, Mapping):
        meta: Mapping[str, Any] = obj.get("metadata") or {}
        return ObjectReference(
            apiVersion=api_version or obj.get("apiVersion") or "",
            kind=kind or obj.get("kind") or "",
            namespace=meta.get("namespace") or "",
            name=meta.get("name") or "",
            uid=meta.get("uid") or "",
            resourceVersion=meta.get("resourceVersion") or "",
        )
    m = obj.metadata
    return ObjectReference(
        apiVersion=api_version or getattr(obj, "apiVersion", None) or "",
        kind=kind or getattr(obj, "kind", None) or "",
        namespace=m.namespace or "",
        name=m.name or "",
        uid=m.uid or "",
        resourceVersion=m.resourceVersion or "",
    )


@dataclass(frozen=True)
class PendingEvent:
    regarding: ObjectReference
    type: str
    reason: str
    action: str
    note: str
    related: ObjectReference | None
    observed_at: datetime.datetime

    def series_key(self) -> tuple[object, ...]:
        return (self.regarding.uid, self.regarding.namespace, self.regarding.name, self.type, self.reason,
                self.action, self.note, self.related)  # fmt: skip


@dataclass
class _Series:
    namespace: str
    name: str
    count: int
    last_seen: float
    last_observed: datetime.datetime
    written_count: int = 1

    def body(self) -> dict[str, Any]:
        return {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}


class EventSink:
    """Where events go; the real one is `ApiEventSink`, tests may pass a list-backed fake."""

    async def create(self, namespace: str, body: dict[str, Any]) -> None:
        raise NotImplementedError

    async def patch_series(self, namespace: str, name: str, series: dict[str, Any]) -> None:
        raise NotImplementedError


class ApiEventSink(EventSink):
    def __init__(self, client: Any) -> None:
        self._client = client

    async def create(self, namespace: str, body: dict[str, Any]) -> None:
        await self._client.create(EVENTS, body, namespace=namespace)

    async def patch_series(self, namespace: str, name: str, series: dict[str, Any]) -> None:
        await self._client.merge_patch(EVENTS, namespace, name, {"series": series})


def micro_time(moment: datetime.datetime) -> str:
    """metav1.MicroTime's wire format."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    def __init__(
        self,
        sink: EventSink,
        reporting_controller: str,
        *,
        reporting_instance: str | None = None,
        clock: Clock | None = None,
        wall_clock: Callable[[], datetime.datetime] | None = None,
        max_queued: int = DEFAULT_QUEUE_SIZE,
    ) -> None:
        self._sink = sink
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        self._clock: Clock = clock or RealClock()
        self._wall = wall_clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._queue: asyncio.Queue[PendingEvent] = asyncio.Queue(max_queued)
        self._series: dict[tuple[object, ...], _Series] = {}
        self.dropped = 0

    # ----- the controller-facing API ------------------------------------------------------------
    def record(
        self,
        regarding: ObjectReference,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: ObjectReference | None = None,
    ) -> None:
        """Queue an event; never blocks and never raises."""
        event = PendingEvent(regarding, type_, reason, action, note[:MAX_NOTE_LENGTH], related, self._wall())
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("event queue full, dropping event", reason=reason, regarding=regarding.name)

    def normal(self, regarding: ObjectReference, reason: str, action: str, note: str) -> None:
        self.record(regarding, c.EVENT_TYPE_NORMAL, reason, action, note)

    def warning(self, regarding: ObjectReference, reason: str, action: str, note: str) -> None:
        self.record(regarding, c.EVENT_TYPE_WARNING, reason, action, note)

    # ----- the writer ---------------------------------------------------------------------------
    def pending(self) -> int:
        return self._queue.qsize()

    async def run(self) -> None:
        """Write queued events, and refresh series periodically, until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._write_loop())
            group.create_task(self._refresh_loop())

    async def _write_loop(self) -> None:
        while True:
            event = await self._queue.get()
            await self.write(event)

    async def _refresh_loop(self) -> None:
        while True:
            await self._clock.sleep(SERIES_REFRESH)
            await self.refresh_series()

    async def refresh_series(self) -> None:
        """Write counts gathered since the last write; forget series that have finished."""
        now = self._clock.now()
        for key, series in list(self._series.items()):
            if series.count > series.written_count:
                try:
                    await self._sink.patch_series(series.namespace, series.name, series.body())
                    series.written_count = series.count
                except Exception as exc:
                    log.warning("could not refresh event series", event=series.name, error=str(exc))
            if now - series.last_seen > SERIES_WINDOW:
                del self._series[key]

    async def flush(self) -> None:
        """Write everything queued so far (graceful shutdown, tests)."""
        while not self._queue.empty():
            await self.write(self._queue.get_nowait())

    async def write(self, event: PendingEvent) -> None:
        try:
            await self._write(event)
        except Exception as exc:  # an event that cannot be written must not stop the writer
            log.warning(
                "could not write event", reason=event.reason, regarding=event.regarding.name, error=str(exc)
            )

    async def _write(self, event: PendingEvent) -> None:
        key = event.series_key()
        now = self._clock.now()
        series = self._series.get(key)
        if series is not None and now - series.last_seen <= SERIES_WINDOW:
            if await self._repeat(series, event, now):
                return
        elif series is not None and series.count > series.written_count:
            # The old series finished with counts not yet written: record them before starting anew.
            await self._sink.patch_series(series.namespace, series.name, series.body())
        namespace = event.regarding.namespace or "default"
        name = f"{event.regarding.name}.{int(event.observed_at.timestamp() * 1e9):x}"
        await self._sink.create(namespace, self._body(event, namespace, name))
        self._series[key] = _Series(namespace, name, 1, now, event.observed_at)

    async def _repeat(self, series: _Series, event: PendingEvent, now: float) -> bool:
        """Fold a repeat into its series; False when the Event is gone and must be created again."""
        series.count += 1
        series.last_seen = now
        series.last_observed = event.observed_at
        if series.count > 2:
            return True  # counted; the periodic refresh writes it
        try:
            await self._sink.patch_series(series.namespace, series.name, series.body())
        except Exception as exc:
            if not is_not_found(exc):
                raise
            return False  # the Event expired on the server (TTL)
        series.written_count = series.count
        return True

    def _body(self, event: PendingEvent, namespace: str, name: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(event.observed_at),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": event.action,
            "reason": event.reason,
            "note": event.note,
            "type": event.type,
            "regarding": msgspec.to_builtins(event.regarding),
        }
        if event.related is not None:
            body["related"] = msgspec.to_builtins(event.related)
        return body
