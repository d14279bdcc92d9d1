"""Rate limiters with client-go semantics.

* `TokenBucket` is golang.org/x/time/rate's reservation model: a request always gets a slot and is told
  how long to wait for it, so bursts are spread out instead of rejected. It backs both the work queue's
  overall limiter and the API client's QPS/burst throttle.
* `ItemExponentialLimiter` doubles a per-key delay on every failure (5 ms → 1000 s by default).
* `MaxOfLimiter` combines limiters by taking the longest delay, like client-go's default controller
  rate limiter.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

from leaderworkerset.runtime.clock import Clock

DEFAULT_BASE_DELAY = 0.005
DEFAULT_MAX_DELAY = 1000.0
DEFAULT_QUEUE_QPS = 10.0
DEFAULT_QUEUE_BURST = 100


class TokenBucket:
    """Reserve-style token bucket: `reserve()` takes one token now and returns the wait it implies."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        if qps <= 0 or burst <= 0:
            raise ValueError("qps and burst must be positive")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    def _refill(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now

    def reserve(self) -> float:
        """Consume a token (possibly going into debt) and return seconds to wait before using it."""
        now = self._clock.now()
        self._refill(now)
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)


class RateLimiter(Protocol):
    """Per-item delay policy used by the work queue's `add_rate_limited`."""

    def when(self, item: Hashable) -> float: ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialLimiter:
    """base * 2**failures, capped at max_delay; `forget` resets an item after a success."""

    def __init__(self, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        # Cap the exponent first: 2**failures overflows a float after ~1000 failures.
        if failures >= 64:
            return self._max
        return float(min(self._base * (2**failures), self._max))

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketLimiter:
    """An overall limiter: every item shares one token bucket; it keeps no per-item state."""

    def __init__(self, bucket: TokenBucket) -> None:
        self._bucket = bucket

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfLimiter:
    """Asks every limiter (each one records the attempt) and returns the longest delay."""

    def __init__(self, limiters: Sequence[RateLimiter]) -> None:
        self._limiters = list(limiters)

    def when(self, item: Hashable) -> float:
        return max((limiter.when(item) for limiter in self._limiters), default=0.0)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max((limiter.num_requeues(item) for limiter in self._limiters), default=0)


def default_controller_rate_limiter(clock: Clock) -> MaxOfLimiter:
    """client-go's DefaultTypedControllerRateLimiter: per-item 5 ms→1000 s, overall 10 qps / burst 100."""
    return MaxOfLimiter(
        [
            ItemExponentialLimiter(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY),
            BucketLimiter(TokenBucket(DEFAULT_QUEUE_QPS, DEFAULT_QUEUE_BURST, clock)),
        ]
    )
