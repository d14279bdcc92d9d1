"""The informer against a real kube-apiserver: server-side label filtering, live events, recovery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import msgspec
import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.listwatch import HttpListerWatcher, ListOptions
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from leaderworkerset.runtime.reflector import FuncHandler, Informer, ReflectorOptions
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
    """Wraps the real one: breaks the first watch after `break_after` events, or starts it expired."""

    def __init__(self, inner: HttpListerWatcher, break_after: int | None = None, expire_first: bool = False):
        self.inner = inner
        self.break_after = break_after
        self.expire_first = expire_first
        self.watch_calls = 0
        self.list_calls = 0

    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        if continue_token is None:
            self.list_calls += 1
        return await self.inner.list_page(limit, continue_token)

    async def watch(self, resource_version: str, timeout_seconds: int) -> AsyncGenerator[bytes, None]:
        self.watch_calls += 1
        first = self.watch_calls == 1
        if first and self.expire_first:
            # What the server sends once etcd compacted past our version (it compacts every 5 min,
            # too slow to wait for in a test): an ERROR event carrying a 410 Status.
            yield EXPIRED
            return
        count = 0
        async with asyncio.timeout(None):
            async for line in self.inner.watch(resource_version, timeout_seconds):
                yield line
                count += 1
                if first and self.break_after is not None and count >= self.break_after:
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


async def test_sees_only_selected_pods_and_their_lifecycle(
    client: KubeClient, namespace: str, informer_parts: tuple[HttpListerWatcher, Store[Pod]]
) -> None:
    await client.create(PODS, pod("before", namespace, "mine"))
    await client.create(PODS, pod("other", namespace, "theirs"))
    lw, store = informer_parts
    informer = Informer("pods", lw, store)
    events = Events()
    informer.add_handler(events.handler())
    task = await start(informer)
    try:
        assert [k.name for k in store.keys()] == ["before"]  # noqa: SIM118

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
    client: KubeClient, namespace: str, informer_parts: tuple[HttpListerWatcher, Store[Pod]]
) -> None:
    lw, store = informer_parts
    flaky = FlakyListerWatcher(lw, break_after=1)
    informer = Informer("pods", flaky, store, options=ReflectorOptions(initial_backoff=0.05))
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
    client: KubeClient, namespace: str, informer_parts: tuple[HttpListerWatcher, Store[Pod]]
) -> None:
    lw, store = informer_parts
    flaky = FlakyListerWatcher(lw, expire_first=True)
    informer = Informer("pods", flaky, store, options=ReflectorOptions(initial_backoff=0.05))
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
    informer = Informer("pods", counting, store, options=ReflectorOptions(page_size=5))
    task = await start(informer)
    try:
        assert len(store) == 23
        assert counting.list_calls == 1, "five pages, one list"
        assert int(store.resource_version) > 0
    finally:
        await stop(task)
