"""A controller: a work queue of object keys fed by watches, drained by a bounded pool of workers.

Semantics: level-triggered; a key is never reconciled concurrently with itself; an
exception or `Result(requeue=True)` retries with per-key exponential backoff; `requeue_after`
schedules a fresh look; success forgets the key's backoff. Exceptions never stop the loop.

    ctl = Controller("leaderworkerset", reconciler.reconcile, max_concurrent=4, metrics=metrics)
    ctl.watch(lws_informer)                                   # For(LeaderWorkerSet)
    ctl.watch(sts_informer, owner_mapper(LWS_KIND, LWS_GROUP)) # Owns(StatefulSet)
    ctl.watch(pod_informer, label_mapper(SET_NAME_LABEL), predicate=has_label(SET_NAME_LABEL))
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.metrics import (
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_REQUEUE_AFTER,
    RESULT_SUCCESS,
    RuntimeMetrics,
)
from leaderworkerset.runtime.objects import MetaLike, ObjectKey, controller_of, key_of
from leaderworkerset.runtime.ratelimit import RateLimiter
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.workqueue import ShutDownError, WorkQueue

T = TypeVar("T")

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next. The default (no fields) means done until the next event."""

    requeue: bool = False
    requeue_after: float | None = None


Reconcile = Callable[[ObjectKey], Awaitable[Result | None]]
# A mapper turns a changed object (given with its metadata) into the keys to reconcile.
Mapper = Callable[[MetaLike, T], Iterable[ObjectKey]]
Predicate = Callable[[MetaLike, T], bool]
# Whether an update (old, new) can change what the reconcile of the keys it maps to decides.
UpdateFilter = Callable[[T, T], bool]
AddFilter = Callable[[T], bool]


# ----- mappers and predicates -------------------------------------------------------------------
def own_key(meta: MetaLike, _obj: object) -> Iterable[ObjectKey]:
    """For(): the object itself."""
    return (key_of(meta),)


def owner_mapper(kind: str, group: str) -> Mapper[object]:
    """Owns(): the controlling owner of the given kind/group, in the object's namespace."""

    def mapper(meta: MetaLike, _obj: object) -> Iterable[ObjectKey]:
        ref = controller_of(meta)
        if ref is not None and ref.kind == kind and ref.apiVersion.rpartition("/")[0] == group:
            return (ObjectKey(meta.namespace or "", ref.name),)
        return ()

    return mapper


def label_mapper(label_key: str) -> Mapper[object]:
    """The object named by a label's value, in the object's namespace (e.g. the LWS name label)."""

    def mapper(meta: MetaLike, _obj: object) -> Iterable[ObjectKey]:
        value = (meta.labels or {}).get(label_key)
        return (ObjectKey(meta.namespace or "", value),) if value else ()

    return mapper


def has_label(label_key: str) -> Predicate[object]:
    def predicate(meta: MetaLike, _obj: object) -> bool:
        return label_key in (meta.labels or {})

    return predicate


class _Enqueuer(Generic[T]):
    """The event handler a watch installs: map the old and new object to keys and queue them."""

    def __init__(
        self,
        informer: Informer[T],
        queue: WorkQueue[ObjectKey],
        mapper: Mapper[T],
        predicate: Predicate[T] | None,
        batch: float,
        update_matters: UpdateFilter[T] | None,
        add_matters: AddFilter[T] | None = None,
    ) -> None:
        self._meta = informer.store.codec.meta
        self._queue = queue
        self._mapper = mapper
        self._predicate = predicate
        self._batch = batch
        self._update_matters = update_matters
        self._add_matters = add_matters

    def _enqueue(self, obj: T) -> None:
        meta = self._meta(obj)
        if self._predicate is not None and not self._predicate(meta, obj):
            return
        for key in self._mapper(meta, obj):
            if self._batch > 0:
                self._queue.add_batched(key, self._batch)
            else:
                self._queue.add(key)

    def on_add(self, obj: T) -> None:
        if self._add_matters is not None and not self._add_matters(obj):
            return
        self._enqueue(obj)

    def on_update(self, old: T, new: T) -> None:
        if self._update_matters is not None and not self._update_matters(old, new):
            return
        # Both sides: an owner or label change must wake the previous owner as well as the new one.
        self._enqueue(old)
        self._enqueue(new)

    def on_delete(self, obj: T) -> None:
        self._enqueue(obj)


class _ReconcileChildren:
    """This controller's metric children, bound once (label lookups cost more than the updates)."""

    def __init__(self, metrics: RuntimeMetrics, name: str) -> None:
        reconcile = metrics.reconcile
        self.results = {
            result: reconcile.total.labels(name, result)
            for result in (RESULT_SUCCESS, RESULT_ERROR, RESULT_REQUEUE, RESULT_REQUEUE_AFTER)
        }
        self.errors = reconcile.errors.labels(name)
        self.time = reconcile.time.labels(name)
        self.active = reconcile.active_workers.labels(name)
        self.max_concurrent = reconcile.max_concurrent.labels(name)


class Controller:
    def __init__(
        self,
        name: str,
        reconcile: Reconcile,
        *,
        max_concurrent: int = 1,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.name = name
        self.max_concurrent = max_concurrent
        self._reconcile = reconcile
        self._clock: Clock = clock or RealClock()
        self.queue: WorkQueue[ObjectKey] = WorkQueue(
            name, clock=self._clock, rate_limiter=rate_limiter, metrics=metrics.workqueue if metrics else None
        )
        self.informers: list[Informer[object]] = []
        self._active = 0
        self._children = _ReconcileChildren(metrics, name) if metrics is not None else None

    def watch(
        self,
        informer: Informer[T],
        mapper: Mapper[T] = own_key,
        predicate: Predicate[T] | None = None,
        *,
        batch: float = 0.0,
        update_matters: UpdateFilter[T] | None = None,
        add_matters: AddFilter[T] | None = None,
    ) -> None:
        """Queue the keys `mapper` returns for every add/update/delete the informer reports.

        `batch` > 0 merges the events of that many seconds into one reconcile per key (see
        `WorkQueue.add_batched`): for owned objects, whose bursts would otherwise each cost a round.
        `update_matters(old, new)` False drops an update that cannot change what those reconciles
        decide; `add_matters(obj)` False drops an add (the echo of the controller's own create).
        Deletes always pass."""
        informer.add_handler(
            _Enqueuer(informer, self.queue, mapper, predicate, batch, update_matters, add_matters)
        )
        self.informers.append(informer)  # type: ignore[arg-type]

    async def wait_for_sync(self) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers))

    async def run(self) -> None:
        """Run workers until the queue shuts down (via `stop`); cancellation stops them at once."""
        if self._children is not None:
            self._children.max_concurrent.set(self.max_concurrent)
            self._children.active.set(0)
        log.info("starting workers", controller=self.name, worker_count=self.max_concurrent)
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self.max_concurrent):
                    group.create_task(self._worker())
        finally:
            self.queue.shut_down()
        log.info("all workers finished", controller=self.name)

    async def stop(self) -> None:
        """Graceful stop: accept no new keys, let in-flight reconciles finish."""
        await self.queue.shut_down_with_drain()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDownError:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: ObjectKey) -> None:
        """Reconcile one key and requeue as its outcome says; never raises (except cancellation)."""
        self._set_active(+1)
        started = self._clock.now()
        with structlog.contextvars.bound_contextvars(
            controller=self.name, namespace=key.namespace, name=key.name, reconcileID=str(uuid.uuid4())
        ):
            try:
                result = await self._reconcile(key) or Result()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconcile errors are retried, never fatal
                log.error("Reconciler error", error=str(exc), exc_info=exc)
                self._count(RESULT_ERROR, error=True)
                self.queue.add_rate_limited(key)
            else:
                self._requeue(key, result)
            finally:
                self._observe(self._clock.now() - started)
                self._set_active(-1)

    def _requeue(self, key: ObjectKey, result: Result) -> None:
        if result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            self._count(RESULT_REQUEUE_AFTER)
        elif result.requeue:
            self.queue.add_rate_limited(key)
            self._count(RESULT_REQUEUE)
        else:
            self.queue.forget(key)
            self._count(RESULT_SUCCESS)

    # ----- metrics --------------------------------------------------------------------------------
    def _count(self, result: str, error: bool = False) -> None:
        if self._children is None:
            return
        self._children.results[result].inc()
        if error:
            self._children.errors.inc()

    def _observe(self, seconds: float) -> None:
        if self._children is not None:
            self._children.time.observe(seconds)

    def _set_active(self, delta: int) -> None:
        self._active += delta
        if self._children is not None:
            self._children.active.set(self._active)

    @property
    def active_workers(self) -> int:
        return self._active
