"""An events.k8s.io/v1 event recorder that never blocks a reconcile.

`record()` is synchronous: it queues the event on a bounded in-memory queue and returns. A writer task
(`run()`, started by the manager) creates the Event objects. When the queue is full, events are dropped
and counted, like client-go's broadcaster, because losing an event is better than stalling a
controller.

Repeats are folded into an EventSeries the way client-go's events library does: the first occurrence
creates an Event; an identical one (same regarding object, type, reason, action, note and reporter)
within the series window patches `series.count` / `series.lastObservedTime` of that Event instead of
creating another.
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

SERIES_WINDOW = 6 * 60.0  # client-go's isKeyNotExpired window for series
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
        """Write queued events until cancelled."""
        while True:
            event = await self._queue.get()
            await self.write(event)

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
            series.count += 1
            series.last_seen = now
            body = {"count": series.count, "lastObservedTime": micro_time(event.observed_at)}
            try:
                await self._sink.patch_series(series.namespace, series.name, body)
                return
            except Exception as exc:
                if not is_not_found(exc):
                    raise
                # The event expired on the server (TTL): start a new one below.
        namespace = event.regarding.namespace or "default"
        name = f"{event.regarding.name}.{int(event.observed_at.timestamp() * 1e9):x}"
        await self._sink.create(namespace, self._body(event, namespace, name))
        self._series[key] = _Series(namespace, name, 1, now)
        self._expire_series(now)

    def _expire_series(self, now: float) -> None:
        if len(self._series) < 4096:
            return
        for key in [k for k, s in self._series.items() if now - s.last_seen > SERIES_WINDOW]:
            del self._series[key]

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
