"""The informer against a real kube-apiserver: server-side label filtering, live events, recovery."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import msgspec
import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.listwatch import HttpListerWatcher, ListOptions
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from leaderworkerset.runtime.reflector import INITIAL_EVENTS_END, FuncHandler, Informer, ReflectorOptions
from leaderworkerset.runtime.resources import PODS
from leaderworkerset.runtime.store import Store, index_by_labels, label_values
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

APP = "runtime-test/app"
EXPIRED = msgspec.json.encode(
    {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}
)


def pod(name: str, namespace: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {APP: app}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }


class Events:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def handler(self) -> FuncHandler[Pod]:
        return FuncHandler(
            add=lambda p: self.seen.append(f"add {p.metadata.name}"),
            update=lambda _o, p: self.seen.append(f"update {p.metadata.name}"),
            delete=lambda p: self.seen.append(f"delete {p.metadata.name}"),
        )


class FlakyListerWatcher:
    """Wraps the real one: breaks the first watch after `break_after` object events, or expires it
    right after the sync (at once after a LIST; after the initial events of a streaming list). A
    streaming list counts as a list."""

    def __init__(self, inner: HttpListerWatcher, break_after: int | None = None, expire_first: bool = False):
        self.inner = inner
        self.break_after = break_after
        self.expire_first = expire_first
        self.watch_calls = 0
        self.list_calls = 0
        self.faulted = False

    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        if continue_token is None:
            self.list_calls += 1
        return await self.inner.list_page(limit, continue_token)

    async def watch(
        self, resource_version: str, timeout_seconds: int, *, initial_events: bool = False
    ) -> AsyncGenerator[bytes, None]:
        self.watch_calls += 1
        self.list_calls += initial_events
        first = not self.faulted  # the fault goes into the first watch that gets that far
        count = 0
        synced = not initial_events
        async with contextlib.aclosing(
            self.inner.watch(resource_version, timeout_seconds, initial_events=initial_events)
        ) as stream:
            if first and self.expire_first and synced:
                # What the server sends once etcd compacted past our version (it compacts every 5 min,
                # too slow to wait for in a test): an ERROR event carrying a 410 Status.
                self.faulted = True
                yield EXPIRED
                return
            async for line in stream:
                yield line
                if not synced:
                    synced = INITIAL_EVENTS_END.encode() in line
                    if synced and first and self.expire_first:
                        self.faulted = True
                        yield EXPIRED
                        return
                    continue
                count += b'"BOOKMARK"' not in line[:40]
                if first and self.break_after is not None and count >= self.break_after:
                    self.faulted = True
                    raise ConnectionResetError("simulated broken watch")


async def start(informer: Informer[Pod]) -> asyncio.Task[None]:
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_for_sync(), 30)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
def informer_parts(client: KubeClient, namespace: str) -> tuple[HttpListerWatcher, Store[Pod]]:
    lw = HttpListerWatcher(client.transport, PODS, namespace, ListOptions(label_selector=f"{APP}=mine"))
    return lw, Store(POD_CODEC, {"app": index_by_labels(APP)})


@pytest.fixture(params=[True, False], ids=["streaming-list", "paginated-list"])
def streaming(request: pytest.FixtureRequest) -> bool:
    """Both ways to sync: a streaming list (the default where WatchList is on), and LIST + watch."""
    return bool(request.param)


async def test_sees_only_selected_pods_and_their_lifecycle(
    client: KubeClient,
    namespace: str,
    informer_parts: tuple[HttpListerWatcher, Store[Pod]],
    streaming: bool,
) -> None:
    await client.create(PODS, pod("before", namespace, "mine"))
    await client.create(PODS, pod("other", namespace, "theirs"))
    lw, store = informer_parts
    informer = Informer("pods", lw, store, options=ReflectorOptions(streaming_list=streaming))
    events = Events()
    informer.add_handler(events.handler())
    task = await start(informer)
    try:
        assert [k.name for k in store.keys()] == ["before"]  # noqa: SIM118
        assert (informer.streamed_lists, informer.lists) == ((1, 0) if streaming else (0, 1))

        await client.create(PODS, pod("after", namespace, "mine"))
        await client.create(PODS, pod("ignored", namespace, "theirs"))
        await client.merge_patch(PODS, namespace, "after", {"metadata": {"annotations": {"touched": "yes"}}})
        await client.delete(PODS, namespace, "before")

        def converged() -> bool:
            assert sorted(k.name for k in store.keys()) == ["after"]  # noqa: SIM118
            assert "delete before" in events.seen
            assert "update after" in events.seen
            return True

        await eventually(converged)
        assert not any("ignored" in e or "other" in e for e in events.seen)
        assert [p.metadata.name for p in store.by_index("app", label_values("mine"))] == ["after"]
        cached = store.get(ObjectKey(namespace, "after"))
        assert cached is not None
        assert cached.status.phase == "Pending"
    finally:
        await stop(task)


async def test_recovers_after_broken_watch(
    client: KubeClient,
    namespace: str,
    informer_parts: tuple[HttpListerWatcher, Store[Pod]],
    streaming: bool,
) -> None:
    lw, store = informer_parts
    flaky = FlakyListerWatcher(lw, break_after=1)
    informer = Informer(
        "pods", flaky, store, options=ReflectorOptions(initial_backoff=0.05, streaming_list=streaming)
    )
    task = await start(informer)
    try:
        await client.create(PODS, pod("p1", namespace, "mine"))  # the event that precedes the break
        await eventually(lambda: flaky.watch_calls >= 2)
        await client.create(PODS, pod("p2", namespace, "mine"))
        await eventually(lambda: sorted(k.name for k in store.keys()) == ["p1", "p2"])  # noqa: SIM118
        assert flaky.list_calls == 1, "a broken watch resumes from its version without re-listing"
    finally:
        await stop(task)


async def test_relists_when_version_expired(
    client: KubeClient,
    namespace: str,
    informer_parts: tuple[HttpListerWatcher, Store[Pod]],
    streaming: bool,
) -> None:
    lw, store = informer_parts
    flaky = FlakyListerWatcher(lw, expire_first=True)
    informer = Informer(
        "pods", flaky, store, options=ReflectorOptions(initial_backoff=0.05, streaming_list=streaming)
    )
    task = await start(informer)
    try:
        await client.create(PODS, pod("during", namespace, "mine"))  # created around the re-list
        await eventually(lambda: flaky.list_calls >= 2)
        await client.create(PODS, pod("late", namespace, "mine"))
        await eventually(lambda: sorted(k.name for k in store.keys()) == ["during", "late"])  # noqa: SIM118
    finally:
        await stop(task)


async def test_paginated_initial_list(
    client: KubeClient, namespace: str, informer_parts: tuple[HttpListerWatcher, Store[Pod]]
) -> None:
    await asyncio.gather(*(client.create(PODS, pod(f"p{i:02d}", namespace, "mine")) for i in range(23)))
    lw, store = informer_parts
    counting = FlakyListerWatcher(lw)
    informer = Informer("pods", counting, store, options=ReflectorOptions(page_size=5, streaming_list=False))
    task = await start(informer)
    try:
        assert len(store) == 23
        assert counting.list_calls == 1, "five pages, one list"
        assert int(store.resource_version) > 0
    finally:
        await stop(task)


async def test_streaming_initial_list(
    client: KubeClient, namespace: str, informer_parts: tuple[HttpListerWatcher, Store[Pod]]
) -> None:
    """The local apiserver has WatchList on (the default of 1.34-1.37): the objects arrive as the
    watch's initial events and the cache syncs on the end bookmark, without any LIST."""
    await asyncio.gather(*(client.create(PODS, pod(f"p{i:02d}", namespace, "mine")) for i in range(23)))
    lw, store = informer_parts
    counting = FlakyListerWatcher(lw)
    informer = Informer("pods", counting, store)
    task = await start(informer)
    try:
        assert len(store) == 23
        assert (informer.streamed_lists, informer.lists, counting.watch_calls) == (1, 0, 1)
        assert int(store.resource_version) > 0
        await client.create(PODS, pod("later", namespace, "mine"))
        await eventually(lambda: len(store) == 24)
        assert counting.watch_calls == 1, "the streaming list's watch carries the later events"
    finally:
        await stop(task)
