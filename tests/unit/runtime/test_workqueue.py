"""Work queue semantics (client-go): dedupe, one worker per key, delays, backoff, shutdown."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.metrics import new_runtime_metrics
from leaderworkerset.runtime.ratelimit import ItemExponentialLimiter
from leaderworkerset.runtime.workqueue import ShutDownError, WorkQueue


def new_queue(clock: FakeClock | None = None) -> WorkQueue[str]:
    return WorkQueue("test", clock=clock or FakeClock(), rate_limiter=ItemExponentialLimiter(1.0, 8.0))


async def drain(queue: WorkQueue[str]) -> list[str]:
    """Every key currently available, each marked done right away."""
    got = []
    while len(queue):
        key = await queue.get()
        got.append(key)
        queue.done(key)
    return got


@dataclass(frozen=True)
class Step:
    op: str  # add | get | done
    key: str = ""


@pytest.mark.parametrize(
    ("steps", "want_available"),
    [
        pytest.param([Step("add", "a"), Step("add", "b")], ["a", "b"], id="fifo order"),
        pytest.param(
            [Step("add", "a"), Step("add", "a"), Step("add", "b")], ["a", "b"], id="queued key dedupes"
        ),
        pytest.param(
            [Step("add", "a"), Step("get"), Step("add", "a")],
            [],
            id="key added while processing is not handed out again before done",
        ),
        pytest.param(
            [Step("add", "a"), Step("get"), Step("add", "a"), Step("add", "a"), Step("done", "a")],
            ["a"],
            id="dirty key requeued exactly once after done",
        ),
        pytest.param(
            [Step("add", "a"), Step("get"), Step("done", "a")],
            [],
            id="done without re-add leaves nothing",
        ),
    ],
)
async def test_queue_steps(steps: list[Step], want_available: list[str]) -> None:
    queue = new_queue()
    for step in steps:
        if step.op == "add":
            queue.add(step.key)
        elif step.op == "get":
            await queue.get()
        else:
            queue.done(step.key)
    assert [queue._queue[i] for i in range(len(queue))] == want_available


async def test_getter_waits_for_add() -> None:
    queue = new_queue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("x")
    assert await getter == "x"


async def test_two_workers_never_hold_the_same_key() -> None:
    queue = new_queue()
    queue.add("a")
    first = await queue.get()
    second = asyncio.create_task(queue.get())
    queue.add("a")
    await asyncio.sleep(0)
    assert not second.done(), "a key being processed must not be handed to a second worker"
    queue.done(first)
    assert await second == "a"


@pytest.mark.parametrize(
    ("delays", "advance", "want_ready"),
    [
        pytest.param([("a", 5.0)], 4.9, [], id="not ready before the delay"),
        pytest.param([("a", 5.0)], 5.0, ["a"], id="ready at the delay"),
        pytest.param([("a", 5.0), ("a", 1.0)], 1.0, ["a"], id="earlier deadline replaces later"),
        pytest.param([("a", 1.0), ("a", 5.0)], 1.0, ["a"], id="later deadline ignored"),
        pytest.param([("a", 0.0)], 0.0, ["a"], id="zero delay adds immediately"),
        pytest.param([("b", 2.0), ("a", 1.0)], 3.0, ["a", "b"], id="fires in deadline order"),
    ],
)
async def test_add_after(delays: list[tuple[str, float]], advance: float, want_ready: list[str]) -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    for key, delay in delays:
        queue.add_after(key, delay)
    clock.advance(advance)
    assert await drain(queue) == want_ready


async def test_add_after_fires_once_even_with_repeated_requests() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after("a", 3.0)
    queue.add_after("a", 2.0)
    clock.advance(10.0)
    assert await drain(queue) == ["a"]
    assert queue.waiting_count() == 0


@pytest.mark.parametrize(
    ("steps", "want_after_window"),
    [
        pytest.param(["batched", "batched", "batched"], ["a"], id="a burst becomes one key"),
        pytest.param(["add", "batched"], [], id="a queued key needs no timer"),
        pytest.param(["get", "batched", "batched"], ["a"], id="a key being processed comes back once"),
    ],
)
async def test_add_batched_merges_a_burst(steps: list[str], want_after_window: list[str]) -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    processing = False
    for step in steps:
        if step == "get":
            queue.add("a")
            await queue.get()
            processing = True
        elif step == "add":
            queue.add("a")
        else:
            queue.add_batched("a", 0.1)
    before_window = len(queue)
    clock.advance(0.1)
    if processing:
        queue.done("a")
    got = await drain(queue)
    assert (before_window, got[before_window:]) == (1 if steps[0] == "add" else 0, want_after_window)
    assert queue.waiting_count() == 0


async def test_rate_limited_backoff_grows_and_forget_resets() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    want_delays = [1.0, 2.0, 4.0, 8.0, 8.0]
    for want in want_delays:
        queue.add_rate_limited("a")
        clock.advance(want - 0.001)
        assert len(queue) == 0
        clock.advance(0.001)
        assert await drain(queue) == ["a"]
    assert queue.num_requeues("a") == len(want_delays)
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_shutdown_hands_out_queued_keys_then_stops() -> None:
    queue = new_queue()
    queue.add("a")
    queue.shut_down()
    queue.add("b")  # ignored after shutdown
    assert await queue.get() == "a"
    with pytest.raises(ShutDownError):
        await queue.get()


async def test_shutdown_wakes_blocked_getters() -> None:
    queue = new_queue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.shut_down()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDownError) for r in results)


async def test_shutdown_cancels_pending_delays() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after("a", 1.0)
    queue.shut_down()
    clock.advance(2.0)
    assert len(queue) == 0


async def test_shut_down_with_drain_waits_for_in_flight_keys() -> None:
    queue = new_queue()
    queue.add("a")
    key = await queue.get()
    drained = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drained.done()
    queue.done(key)
    await asyncio.wait_for(drained, 1.0)


async def test_cancelled_getter_passes_its_wakeup_on() -> None:
    queue = new_queue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")
    first.cancel()
    await asyncio.sleep(0)
    assert await asyncio.wait_for(second, 1.0) == "a"


async def test_metrics_follow_controller_runtime_names() -> None:
    clock = FakeClock()
    metrics = new_runtime_metrics(CollectorRegistry())
    queue: WorkQueue[str] = WorkQueue(
        "lws", clock=clock, rate_limiter=ItemExponentialLimiter(), metrics=metrics.workqueue
    )
    queue.add("a")
    queue.add("a")
    queue.add("b")
    clock.advance(2.0)
    key = await queue.get()
    clock.advance(3.0)
    queue.done(key)
    queue.add_rate_limited("c")

    def sample(name: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"name": "lws", "controller": "lws"})

    assert sample("workqueue_adds_total") == 2
    assert sample("workqueue_depth") == 1
    assert sample("workqueue_retries_total") == 1
    assert sample("workqueue_queue_duration_seconds_sum") == pytest.approx(2.0)
    assert sample("workqueue_work_duration_seconds_sum") == pytest.approx(3.0)
    assert sample("workqueue_unfinished_work_seconds") == 0
    clock.advance(0.005)  # "c" comes back from its backoff
    await queue.get()
    clock.advance(4.0)
    await queue.get()
    clock.advance(1.0)
    # Two keys in flight for 5 s and 1 s.
    assert sample("workqueue_unfinished_work_seconds") == pytest.approx(6.0)
    assert sample("workqueue_longest_running_processor_seconds") == pytest.approx(5.0)


async def test_contains_means_queued_or_in_flight_not_delayed() -> None:
    """What the integration tests' "controller processed it" sign relies on."""
    clock = FakeClock()
    queue = new_queue(clock)
    assert "a" not in queue
    queue.add("a")
    assert "a" in queue  # queued
    key = await queue.get()
    assert key in queue  # in flight
    queue.done(key)
    assert key not in queue  # processed
    queue.add_rate_limited("a")
    assert "a" not in queue  # a delayed retry waits outside the queue
    clock.advance(1.0)
    assert "a" in queue  # the retry is due: queued again
