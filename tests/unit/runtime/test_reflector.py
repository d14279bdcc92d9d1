"""Informer: list+watch bookkeeping, relist on 410, backoff on errors, handler dispatch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from leaderworkerset.runtime.reflector import FuncHandler, Informer, ReflectorOptions
from leaderworkerset.runtime.store import Store
from tests.unit.runtime.builders import bookmark, error_event, event, initial_events_end, list_body, obj
from tests.unit.runtime.fakes import FakeListerWatcher, settle

Obj = dict[str, Any]


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def handler(self) -> FuncHandler[Obj]:
        return FuncHandler(
            add=lambda o: self.events.append(f"add {o['metadata']['name']}"),
            update=lambda old, new: self.events.append(
                f"update {new['metadata']['name']} {old['metadata']['resourceVersion']}->"
                f"{new['metadata']['resourceVersion']}"
            ),
            delete=lambda o: self.events.append(f"delete {o['metadata']['name']}"),
        )


def names(store: Store[Obj]) -> list[str]:
    return sorted(k.name for k in store.keys())  # noqa: SIM118 - iterating a Store yields objects


@contextlib.asynccontextmanager
async def running(informer: Informer[Obj]) -> AsyncIterator[None]:
    task = asyncio.create_task(informer.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
def lw() -> FakeListerWatcher:
    return FakeListerWatcher()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


async def test_paginated_list_syncs_and_watches_from_list_version(
    lw: FakeListerWatcher, clock: FakeClock, recorder: Recorder
) -> None:
    lw.lists.append([list_body([obj("a")], rv="", cont="next"), list_body([obj("b")], rv="10")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(recorder.handler())
    assert not inf.has_synced()
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(inf.wait_for_sync(), 1)
    await settle()
    assert names(inf.store) == ["a", "b"]
    assert recorder.events == ["add a", "add b"]
    assert lw.watch_rvs == ["10"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize(
    ("watch_script", "want_names", "want_events", "want_rv"),
    [
        pytest.param(
            [event("ADDED", obj("b", rv="11"))], ["a", "b"], ["add b"], "11", id="added"
        ),
        pytest.param(
            [event("MODIFIED", obj("a", rv="12"))], ["a"], ["update a 1->12"], "12", id="modified"
        ),
        pytest.param(
            [event("DELETED", obj("a", rv="13"))], [], ["delete a"], "13", id="deleted"
        ),
        pytest.param([bookmark("20")], ["a"], [], "20", id="bookmark only moves the version"),
    ],
)  # fmt: skip
async def test_watch_events(
    lw: FakeListerWatcher,
    clock: FakeClock,
    recorder: Recorder,
    watch_script: list[bytes],
    want_names: list[str],
    want_events: list[str],
    want_rv: str,
) -> None:
    lw.lists.append([list_body([obj("a")], rv="10")])
    lw.watches.append(list(watch_script))
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(recorder.handler())
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(lw.blocked.wait(), 1)
    assert names(inf.store) == want_names
    assert recorder.events[1:] == want_events
    # The stream ended normally, so the next watch resumes from the last version seen.
    assert lw.watch_rvs == ["10", want_rv]
    assert inf.store.resource_version == want_rv
    assert lw.list_calls == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize(
    "expiry",
    [
        pytest.param(error_event(410, "Expired", "too old resource version"), id="watch ERROR event 410"),
        pytest.param(ApiStatusError(ApiStatus(code=410, reason="Gone")), id="HTTP 410 on connect"),
    ],
)
async def test_expired_watch_relists_and_diffs(
    lw: FakeListerWatcher, clock: FakeClock, recorder: Recorder, expiry: bytes | Exception
) -> None:
    lw.lists.append([list_body([obj("a"), obj("b")], rv="10")])
    lw.watches.append([expiry])
    lw.lists.append([list_body([obj("a", rv="30"), obj("c", rv="31")], rv="40")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(recorder.handler())
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(lw.blocked.wait(), 1)
    assert lw.list_calls == 2
    assert names(inf.store) == ["a", "c"]
    assert recorder.events[2:] == ["update a 1->30", "add c", "delete b"]
    assert lw.watch_rvs == ["10", "40"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_broken_watch_backs_off_and_resumes_from_same_version(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    lw.lists.append([list_body([obj("a")], rv="10")])
    lw.watches.append([event("ADDED", obj("b", rv="11")), ConnectionError("reset")])
    lw.watches.append([ConnectionError("refused")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    task = asyncio.create_task(inf.run())
    await settle()
    assert lw.watch_rvs == ["10"], "first retry waits for the backoff"
    clock.advance(0.8)
    await settle()
    assert lw.watch_rvs == ["10", "11"]
    clock.advance(1.5)
    await settle()
    assert lw.watch_rvs == ["10", "11"], "backoff doubled to 1.6 s"
    clock.advance(0.1)
    await asyncio.wait_for(lw.blocked.wait(), 1)
    assert lw.watch_rvs == ["10", "11", "11"]
    assert lw.list_calls == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_failed_list_retries_after_backoff(lw: FakeListerWatcher, clock: FakeClock) -> None:
    lw.lists.append(ApiStatusError(ApiStatus(code=500, reason="InternalError")))
    lw.lists.append([list_body([obj("a")], rv="5")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    task = asyncio.create_task(inf.run())
    await settle()
    assert not inf.has_synced()
    clock.advance(0.8)
    await asyncio.wait_for(inf.wait_for_sync(), 1)
    assert names(inf.store) == ["a"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_failing_handler_does_not_stop_others(lw: FakeListerWatcher, clock: FakeClock) -> None:
    lw.lists.append([list_body([obj("a")], rv="5")])
    seen: list[str] = []

    def boom(_o: Obj) -> None:
        raise RuntimeError("handler bug")

    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(FuncHandler(add=boom))
    inf.add_handler(FuncHandler(add=lambda o: seen.append(o["metadata"]["name"])))
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(lw.blocked.wait(), 1)
    assert seen == ["a"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_late_handler_receives_existing_objects(lw: FakeListerWatcher, clock: FakeClock) -> None:
    lw.lists.append([list_body([obj("a"), obj("b")], rv="5")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    task = asyncio.create_task(inf.run())
    await asyncio.wait_for(inf.wait_for_sync(), 1)
    late = Recorder()
    inf.add_handler(late.handler())
    assert sorted(late.events) == ["add a", "add b"]
    assert inf.store.get(ObjectKey("default", "a")) is not None
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_undecodable_objects_are_skipped_not_retried_forever(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    bad = obj("bad", rv="2", status={"phase": 42})  # the Pod projection wants a string
    lw.lists.append([list_body([obj("a"), bad], rv="10")])
    lw.watches.append(
        [event("ADDED", obj("bad2", rv="11", status={"phase": 7})), event("ADDED", obj("b", rv="12"))]
    )
    informer: Informer[Pod] = Informer("pods", lw, Store(POD_CODEC), clock=clock)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(lw.blocked.wait(), 1)
    assert sorted(k.name for k in informer.store.keys()) == ["a", "b"]  # noqa: SIM118
    assert lw.list_calls == 1
    assert lw.watch_rvs == ["10", "12"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_resync_redelivers_cached_objects_as_updates(
    lw: FakeListerWatcher, clock: FakeClock, recorder: Recorder
) -> None:
    lw.lists.append([list_body([obj("a")], rv="5")])
    informer: Informer[Obj] = Informer(
        "pods", lw, Store(DictCodec()), clock=clock, options=ReflectorOptions(resync_period=60.0)
    )
    informer.add_handler(recorder.handler())
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(lw.blocked.wait(), 1)
    clock.advance(59.0)
    await settle()
    assert recorder.events == ["add a"]
    clock.advance(1.0)
    await settle()
    assert recorder.events == ["add a", "update a 1->1"]
    assert lw.list_calls == 1, "a resync replays the cache; it does not list again"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_streaming_list_syncs_on_the_end_bookmark_and_reads_on(
    lw: FakeListerWatcher, clock: FakeClock, recorder: Recorder
) -> None:
    lw.streams.append([
        event("ADDED", obj("a", rv="3")), bookmark("4"), event("ADDED", obj("b", rv="5")),
        initial_events_end("10"), event("ADDED", obj("c", rv="11")),
    ])  # fmt: skip
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(recorder.handler())
    async with running(inf):
        await asyncio.wait_for(lw.blocked.wait(), 1)
        assert inf.has_synced()
        assert recorder.events == ["add a", "add b", "add c"]
        # The same watch carried the event after the sync; its end resumes from the last version.
        assert lw.watch_rvs == ["11"]
        assert (lw.stream_calls, lw.list_calls, inf.streamed_lists) == (1, 0, 1)


async def test_streaming_list_not_synced_before_the_end_bookmark(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    lw.streams.append([event("ADDED", obj("a", rv="3")), bookmark("4")])
    lw.streams.append([event("ADDED", obj("a", rv="3")), initial_events_end("8")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    async with running(inf):
        await settle()
        assert not inf.has_synced(), "a stream that ended early is no list"
        clock.advance(0.8)
        await asyncio.wait_for(inf.wait_for_sync(), 1)
        assert names(inf.store) == ["a"]
        assert (lw.stream_calls, lw.list_calls) == (2, 0)


async def test_refused_streaming_list_falls_back_to_paginated_lists_for_good(
    lw: FakeListerWatcher, clock: FakeClock
) -> None:
    lw.lists.append([list_body([obj("a")], rv="", cont="next"), list_body([obj("b")], rv="10")])
    lw.watches.append([error_event(410, "Expired")])
    lw.lists.append([list_body([obj("b")], rv="20")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    async with running(inf):
        await asyncio.wait_for(lw.blocked.wait(), 1)
        assert names(inf.store) == ["b"]
        assert (lw.stream_calls, lw.list_calls, inf.streamed_lists) == (1, 2, 0), "the refusal is remembered"
        assert lw.watch_rvs == ["10", "20"]


async def test_expired_watch_after_a_streaming_list_streams_again(
    lw: FakeListerWatcher, clock: FakeClock, recorder: Recorder
) -> None:
    lw.streams.append([event("ADDED", obj("a")), event("ADDED", obj("b")), initial_events_end("10"),
                       error_event(410, "Expired")])  # fmt: skip
    lw.streams.append([event("ADDED", obj("a", rv="30")), initial_events_end("40")])
    inf: Informer[Obj] = Informer("pods", lw, Store(DictCodec()), clock=clock)
    inf.add_handler(recorder.handler())
    async with running(inf):
        await asyncio.wait_for(lw.blocked.wait(), 1)
        assert names(inf.store) == ["a"]
        assert recorder.events == ["add a", "add b", "update a 1->30", "delete b"]
        assert (lw.stream_calls, lw.list_calls) == (2, 0)
        assert lw.watch_rvs == ["40"]
