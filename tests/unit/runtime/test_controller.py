"""Controller loop: outcomes of reconcile → requeue policy and metrics; mappers; no self-concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.controller import (
    Controller,
    Result,
    has_label,
    label_mapper,
    own_key,
    owner_mapper,
)
from leaderworkerset.runtime.metrics import new_runtime_metrics
from leaderworkerset.runtime.objects import ObjectKey, meta_from_dict
from leaderworkerset.runtime.ratelimit import ItemExponentialLimiter
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.store import Store
from tests.unit.runtime.builders import list_body, obj, owner
from tests.unit.runtime.fakes import FakeListerWatcher, settle

KEY = ObjectKey("ns", "lws")
SET = "leaderworkerset.sigs.k8s.io/name"


def make(reconcile: Callable[[ObjectKey], Awaitable[Result | None]], clock: FakeClock, workers: int = 1):  # type: ignore[no-untyped-def]
    metrics = new_runtime_metrics(CollectorRegistry())
    ctl = Controller(
        "leaderworkerset",
        reconcile,
        max_concurrent=workers,
        clock=clock,
        rate_limiter=ItemExponentialLimiter(1.0, 100.0),
        metrics=metrics,
    )
    return ctl, metrics


async def ok(_key: ObjectKey) -> Result | None:
    return None


async def fails(_key: ObjectKey) -> Result | None:
    raise RuntimeError("apiserver said no")


async def requeue(_key: ObjectKey) -> Result | None:
    return Result(requeue=True)


async def requeue_after(_key: ObjectKey) -> Result | None:
    return Result(requeue_after=30.0)


@pytest.mark.parametrize(
    ("reconcile", "want_result", "want_errors", "want_delay", "want_requeues"),
    [
        pytest.param(ok, "success", 0, None, 0, id="success forgets the key"),
        pytest.param(fails, "error", 1, 1.0, 1, id="exception is counted and retried with backoff"),
        pytest.param(requeue, "requeue", 0, 1.0, 1, id="requeue uses the rate limiter"),
        pytest.param(requeue_after, "requeue_after", 0, 30.0, 0, id="requeue_after waits exactly"),
    ],
)
async def test_reconcile_outcomes(
    reconcile: Callable[[ObjectKey], Awaitable[Result | None]],
    want_result: str,
    want_errors: int,
    want_delay: float | None,
    want_requeues: int,
) -> None:
    clock = FakeClock()
    ctl, metrics = make(reconcile, clock)
    await ctl.process(KEY)
    labels = {"controller": "leaderworkerset"}
    assert (
        metrics.registry.get_sample_value(
            "controller_runtime_reconcile_total", {**labels, "result": want_result}
        )
        == 1
    )
    assert (
        metrics.registry.get_sample_value("controller_runtime_reconcile_errors_total", labels) or 0
    ) == want_errors
    assert metrics.registry.get_sample_value("controller_runtime_reconcile_time_seconds_count", labels) == 1
    assert ctl.queue.num_requeues(KEY) == want_requeues
    if want_delay is None:
        assert ctl.queue.waiting_count() == 0
        assert len(ctl.queue) == 0
        return
    clock.advance(want_delay - 0.001)
    assert len(ctl.queue) == 0
    clock.advance(0.001)
    assert len(ctl.queue) == 1


async def test_workers_survive_errors_and_keep_going() -> None:
    clock = FakeClock()
    seen: list[ObjectKey] = []

    async def flaky(key: ObjectKey) -> Result | None:
        seen.append(key)
        if key.name == "bad":
            raise ValueError("boom")
        return None

    ctl, _ = make(flaky, clock)
    runner = asyncio.create_task(ctl.run())
    ctl.queue.add(ObjectKey("ns", "bad"))
    ctl.queue.add(ObjectKey("ns", "good"))
    await settle()
    clock.advance(1.0)  # the failed key comes back after its backoff
    await settle()
    assert [k.name for k in seen] == ["bad", "good", "bad"]
    await ctl.stop()
    await asyncio.wait_for(runner, 1)


async def test_same_key_is_never_reconciled_concurrently() -> None:
    clock = FakeClock()
    running: dict[ObjectKey, int] = {}
    max_seen = 0
    release = asyncio.Event()
    calls = 0

    async def slow(key: ObjectKey) -> Result | None:
        nonlocal max_seen, calls
        calls += 1
        running[key] = running.get(key, 0) + 1
        max_seen = max(max_seen, running[key])
        await release.wait()
        running[key] -= 1
        return None

    ctl, metrics = make(slow, clock, workers=4)
    runner = asyncio.create_task(ctl.run())
    for _ in range(3):
        ctl.queue.add(KEY)
        await settle()
    ctl.queue.add(ObjectKey("ns", "other"))
    await settle()
    assert ctl.active_workers == 2, "the second key runs in parallel, the repeated key waits"
    assert (
        metrics.registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "leaderworkerset"}
        )
        == 4
    )
    release.set()
    await settle()
    assert max_seen == 1
    assert calls == 3, "adds during processing collapse into one more reconcile"
    await ctl.stop()
    await asyncio.wait_for(runner, 1)


async def test_stop_waits_for_in_flight_reconcile() -> None:
    clock = FakeClock()
    release = asyncio.Event()
    finished: list[ObjectKey] = []

    async def slow(key: ObjectKey) -> Result | None:
        await release.wait()
        finished.append(key)
        return None

    ctl, _ = make(slow, clock)
    runner = asyncio.create_task(ctl.run())
    ctl.queue.add(KEY)
    await settle()
    stopping = asyncio.create_task(ctl.stop())
    await settle()
    assert not stopping.done()
    release.set()
    await asyncio.wait_for(stopping, 1)
    await asyncio.wait_for(runner, 1)
    assert finished == [KEY]


def meta(o: dict[str, Any]):  # type: ignore[no-untyped-def]
    return meta_from_dict(o)


@pytest.mark.parametrize(
    ("mapper", "o", "want"),
    [
        pytest.param(own_key, obj("lws", "ns"), [ObjectKey("ns", "lws")], id="own key"),
        pytest.param(
            owner_mapper("LeaderWorkerSet", "leaderworkerset.x-k8s.io"),
            obj("sts", "ns", owners=[owner("lws")]),
            [ObjectKey("ns", "lws")],
            id="controller owner of the kind",
        ),
        pytest.param(
            owner_mapper("LeaderWorkerSet", "leaderworkerset.x-k8s.io"),
            obj("sts", "ns", owners=[owner("lws", controller=False)]),
            [],
            id="non-controller owner ignored",
        ),
        pytest.param(
            owner_mapper("LeaderWorkerSet", "leaderworkerset.x-k8s.io"),
            obj("sts", "ns", owners=[owner("p", kind="Pod", api_version="v1")]),
            [],
            id="owner of another kind ignored",
        ),
        pytest.param(
            owner_mapper("Pod", ""),
            obj("sts", "ns", owners=[owner("leader-0", kind="Pod", api_version="v1")]),
            [ObjectKey("ns", "leader-0")],
            id="core group owner",
        ),
        pytest.param(
            label_mapper(SET), obj("p", "ns", labels={SET: "lws"}), [ObjectKey("ns", "lws")], id="label"
        ),
        pytest.param(label_mapper(SET), obj("p", "ns"), [], id="label missing"),
    ],
)
def test_mappers(mapper: Any, o: dict[str, Any], want: list[ObjectKey]) -> None:
    assert list(mapper(meta(o), o)) == want


async def test_watch_maps_events_to_keys_with_predicate() -> None:
    clock = FakeClock()
    lw = FakeListerWatcher()
    lw.lists.append(
        [
            list_body(
                [obj("p0", "ns", labels={SET: "a"}), obj("p1", "ns", labels={SET: "b"}), obj("x", "ns")],
                rv="1",
            )
        ]
    )
    informer: Informer[dict[str, Any]] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    ctl, _ = make(ok, clock)
    ctl.watch(informer, label_mapper(SET), predicate=has_label(SET))
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(ctl.wait_for_sync(), 1)
    assert sorted(ctl.queue._queue) == [ObjectKey("ns", "a"), ObjectKey("ns", "b")]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_batched_watch_queues_each_key_once_after_the_window() -> None:
    clock = FakeClock()
    lw = FakeListerWatcher()
    lw.lists.append(
        [list_body([obj("p0", "ns", labels={SET: "a"}), obj("p1", "ns", labels={SET: "a"})], rv="1")]
    )
    informer: Informer[dict[str, Any]] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    ctl, _ = make(ok, clock)
    ctl.watch(informer, label_mapper(SET), batch=0.1)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(ctl.wait_for_sync(), 1)
    assert list(ctl.queue._queue) == []
    clock.advance(0.1)
    assert list(ctl.queue._queue) == [ObjectKey("ns", "a")]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_update_filter_drops_updates_that_do_not_matter_but_never_adds_or_deletes() -> None:
    clock = FakeClock()
    informer: Informer[dict[str, Any]] = Informer(
        "pods", FakeListerWatcher(), Store(DictCodec()), clock=clock
    )
    ctl, _ = make(ok, clock)
    ctl.watch(informer, update_matters=lambda old, new: old["spec"] != new["spec"])
    handler = informer._handlers[-1]
    before, relabelled = obj("p0", "ns"), obj("p0", "ns", labels={SET: "a"})
    before["spec"] = relabelled["spec"] = {"x": 1}
    handler.on_update(before, relabelled)
    assert list(ctl.queue._queue) == []
    handler.on_update(before, {**before, "spec": {"x": 2}})
    assert list(ctl.queue._queue) == [ObjectKey("ns", "p0")]
    ctl.queue._queue.clear()
    ctl.queue._dirty.clear()
    handler.on_add(before)
    handler.on_delete(obj("p1", "ns"))
    assert list(ctl.queue._queue) == [ObjectKey("ns", "p0"), ObjectKey("ns", "p1")]


async def test_add_filter_drops_adds_it_refuses_and_never_deletes() -> None:
    clock = FakeClock()
    informer: Informer[dict[str, Any]] = Informer(
        "pods", FakeListerWatcher(), Store(DictCodec()), clock=clock
    )
    ctl, _ = make(ok, clock)
    ctl.watch(informer, add_matters=lambda o: o["metadata"]["name"] != "ours")
    handler = informer._handlers[-1]
    handler.on_add(obj("ours", "ns"))
    assert list(ctl.queue._queue) == []
    handler.on_add(obj("theirs", "ns"))
    handler.on_delete(obj("ours", "ns"))
    assert list(ctl.queue._queue) == [ObjectKey("ns", "theirs"), ObjectKey("ns", "ours")]
