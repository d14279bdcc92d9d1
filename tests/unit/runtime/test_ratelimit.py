"""Rate limiters: client-go's per-item exponential backoff, token bucket reservations, max-of."""

from __future__ import annotations

import pytest

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.ratelimit import (
    BucketLimiter,
    ItemExponentialLimiter,
    MaxOfLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


@pytest.mark.parametrize(
    ("failures", "want_delays"),
    [
        pytest.param(1, [0.005], id="first failure waits the base delay"),
        pytest.param(4, [0.005, 0.01, 0.02, 0.04], id="delay doubles per failure"),
        pytest.param(20, [min(0.005 * 2**i, 1000.0) for i in range(20)], id="capped at 1000 s"),
    ],
)
def test_item_exponential_delays(failures: int, want_delays: list[float]) -> None:
    limiter = ItemExponentialLimiter()
    assert [limiter.when("k") for _ in range(failures)] == pytest.approx(want_delays)
    assert limiter.num_requeues("k") == failures


def test_item_exponential_is_per_item_and_forget_resets() -> None:
    limiter = ItemExponentialLimiter()
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == pytest.approx(0.005)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_item_exponential_survives_huge_failure_counts() -> None:
    limiter = ItemExponentialLimiter(0.005, 1000.0)
    delays = [limiter.when("k") for _ in range(2000)]
    assert delays[-1] == 1000.0


@pytest.mark.parametrize(
    ("qps", "burst", "reservations", "want_last_wait"),
    [
        pytest.param(10.0, 100, 100, 0.0, id="burst is free"),
        pytest.param(10.0, 100, 101, 0.1, id="first beyond burst waits one token"),
        pytest.param(10.0, 100, 110, 1.0, id="debt grows linearly"),
        pytest.param(500.0, 500, 501, 0.002, id="client defaults"),
    ],
)
def test_token_bucket_reservations(qps: float, burst: int, reservations: int, want_last_wait: float) -> None:
    bucket = TokenBucket(qps, burst, FakeClock())
    waits = [bucket.reserve() for _ in range(reservations)]
    assert waits[-1] == pytest.approx(want_last_wait)


def test_token_bucket_refills_with_time_up_to_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10.0, 5, clock)
    for _ in range(5):
        bucket.reserve()
    clock.advance(100.0)
    assert [bucket.reserve() for _ in range(6)][-1] == pytest.approx(0.1)


def test_bucket_limiter_has_no_per_item_state() -> None:
    limiter = BucketLimiter(TokenBucket(1.0, 1, FakeClock()))
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == pytest.approx(1.0)
    assert limiter.num_requeues("a") == 0


def test_max_of_returns_longest_delay() -> None:
    clock = FakeClock()
    limiter = MaxOfLimiter([ItemExponentialLimiter(1.0, 100.0), BucketLimiter(TokenBucket(0.5, 1, clock))])
    assert limiter.when("a") == pytest.approx(1.0)  # exponential dominates
    assert limiter.when("b") == pytest.approx(2.0)  # the bucket is in debt: 1 token at 0.5 qps
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_limiter_combines_both() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    delays = [limiter.when(i) for i in range(101)]
    assert delays[0] == pytest.approx(0.005)
    assert delays[100] == pytest.approx(0.1)  # the 101st item in a burst waits for the 10 qps bucket
