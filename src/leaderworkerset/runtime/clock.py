"""Injectable clocks: the real one follows the event loop, the fake one moves only when a test says so.

Everything in the runtime that waits (work queue delays, rate limiters, leader election, resync) asks a
`Clock`, so unit tests are deterministic and never sleep. A controller that stamps times on objects
(condition transitions, rollout deadlines) asks the same clock for `wall()`, so one injected object
carries both kinds of time.
"""

from __future__ import annotations

import asyncio
import datetime
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic time in seconds plus the two ways the runtime waits for it, and the wall time."""

    def now(self) -> float: ...

    def wall(self) -> datetime.datetime:
        """The UTC time to write on objects (monotonic time means nothing to another process)."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...


class RealClock:
    """The monotonic clock the event loop also uses (usable outside the loop, e.g. by a metrics scrape)."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback)


class _FakeTimer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock for tests: time only moves through `advance()`, which fires due timers in order.

    Its wall time is `wall_start` moved on by as much as `advance()` moved it."""

    def __init__(
        self,
        start: float = 1000.0,
        wall_start: datetime.datetime = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
    ) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime.datetime:
        return self._wall_start + datetime.timedelta(seconds=self._now - self._start)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(self._now + max(delay, 0.0), callback)
        heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        handle = self.call_later(seconds, wake)
        try:
            await done
        finally:
            handle.cancel()

    def pending_timers(self) -> int:
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that becomes due (sleepers resume on the next loop turn)."""
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target
