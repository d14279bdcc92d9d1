"""A rate-limited, delaying work queue with client-go semantics, for one asyncio event loop.

Guarantees the controller relies on:
* a key is handed to at most one worker at a time (the `processing` set);
* adding a key that is already queued is a no-op, and adding a key that is being processed marks it
  dirty so it is queued again once `done()` is called (no update is lost, none is duplicated);
* `add_after` keeps only the earliest pending deadline per key;
* `add_batched` queues a key at most a delay after the first of a burst of adds, all of which it
  merges (a key that is already queued needs no timer);
* `add_rate_limited` asks the rate limiter for the delay; `forget` resets that key's backoff.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from leaderworkerset.runtime.clock import Clock, RealClock, TimerHandle
from leaderworkerset.runtime.metrics import WorkQueueMetrics
from leaderworkerset.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

K = TypeVar("K", bound=Hashable)


class ShutDownError(Exception):
    """Raised by `get()` once the queue is shut down and has nothing left to hand out."""


class _QueueMetrics:
    """Metric children bound once per queue (label lookups are not free); no-ops without metrics."""

    def __init__(self, metrics: WorkQueueMetrics | None, name: str) -> None:
        self._on = metrics is not None
        if metrics is not None:
            labels = (name, name)  # controller-runtime sets both `name` and `controller` to the name
            self._depth = metrics.depth.labels(*labels)
            self._adds = metrics.adds.labels(*labels)
            self._retries = metrics.retries.labels(*labels)
            self._queue_duration = metrics.queue_duration.labels(*labels)
            self._work_duration = metrics.work_duration.labels(*labels)
            self._unfinished = metrics.unfinished_work.labels(*labels)
            self._longest = metrics.longest_running.labels(*labels)

    def track_in_flight(self, unfinished: Callable[[], float], longest: Callable[[], float]) -> None:
        """Gauges computed at scrape time from the keys being processed (client-go polls them)."""
        if self._on:
            self._unfinished.set_function(unfinished)
            self._longest.set_function(longest)

    def depth(self, value: int) -> None:
        if self._on:
            self._depth.set(value)

    def added(self) -> None:
        if self._on:
            self._adds.inc()

    def retried(self) -> None:
        if self._on:
            self._retries.inc()

    def waited(self, seconds: float) -> None:
        if self._on:
            self._queue_duration.observe(seconds)

    def worked(self, seconds: float) -> None:
        if self._on:
            self._work_duration.observe(seconds)


class WorkQueue(Generic[K]):
    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
        metrics: WorkQueueMetrics | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._limiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(self._clock)
        )
        self._metrics = _QueueMetrics(metrics, name)
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._waiting: dict[K, tuple[float, TimerHandle]] = {}
        self._shutting_down = False
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle = asyncio.Event()
        self._idle.set()
        self._metrics.track_in_flight(self._unfinished_seconds, self._longest_running_seconds)

    # ----- inspection -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def __contains__(self, key: object) -> bool:
        """Queued or being processed (a delayed retry waiting in `add_after` is neither)."""
        return key in self._dirty or key in self._processing

    def waiting_count(self) -> int:
        return len(self._waiting)

    def _unfinished_seconds(self) -> float:
        now = self._clock.now()
        return sum(now - started for started in self._started_at.values())

    def _longest_running_seconds(self) -> float:
        now = self._clock.now()
        return max((now - started for started in self._started_at.values()), default=0.0)

    # ----- adding -------------------------------------------------------------------------------
    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._metrics.added()
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock.now())
        if key in self._processing:
            return
        self._queue.append(key)
        self._metrics.depth(len(self._queue))
        self._notify()

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        ready_at = self._clock.now() + delay
        pending = self._waiting.get(key)
        if pending is not None:
            if pending[0] <= ready_at:
                return
            pending[1].cancel()
        handle = self._clock.call_later(delay, lambda: self._fire(key))
        self._waiting[key] = (ready_at, handle)

    def add_batched(self, key: K, delay: float) -> None:
        """Queue `key` `delay` seconds from now, merging every other add of it until then.

        For events of objects a key owns: creating one 100-group set produces thousands of pod and
        StatefulSet updates, each a reason to look at the same set again; one look a short while
        after the first of them sees them all."""
        if key in self._dirty:
            return  # queued, or due again once its current reconcile is done
        self.add_after(key, delay)

    def add_rate_limited(self, key: K) -> None:
        self._metrics.retried()
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: K) -> None:
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self._limiter.num_requeues(key)

    def _fire(self, key: K) -> None:
        self._waiting.pop(key, None)
        self.add(key)

    def _notify(self, all_getters: bool = False) -> None:
        # Synchronous hand-off to a waiting getter: add() is called from synchronous event handlers.
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                if not all_getters:
                    return

    # ----- processing ---------------------------------------------------------------------------
    async def get(self) -> K:
        """Wait for the next key; raises ShutDownError when shut down and empty."""
        while not self._queue and not self._shutting_down:
            getter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                # Pass a wake-up we may have consumed on to the next getter.
                if getter.done() and not getter.cancelled() and self._queue:
                    self._notify()
                raise
        if not self._queue:
            raise ShutDownError(self.name)
        key = self._queue.popleft()
        if self._queue:
            self._notify()
        now = self._clock.now()
        self._metrics.depth(len(self._queue))
        self._metrics.waited(now - self._added_at.pop(key, now))
        self._started_at[key] = now
        self._processing.add(key)
        self._dirty.discard(key)
        self._idle.clear()
        return key

    def done(self, key: K) -> None:
        """Mark a key finished; if it was added while processing, queue it again now."""
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None:
            self._metrics.worked(self._clock.now() - started)
        if key in self._dirty:
            self._queue.append(key)
            self._metrics.depth(len(self._queue))
            self._notify()
        if not self._processing:
            self._idle.set()

    # ----- shutdown -----------------------------------------------------------------------------
    def shut_down(self) -> None:
        """Stop accepting keys; getters drain what is already queued, then get ShutDownError."""
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        self._notify(all_getters=True)

    async def shut_down_with_drain(self) -> None:
        """Shut down and wait until every key handed out so far has been marked done."""
        self.shut_down()
        await self._idle.wait()
