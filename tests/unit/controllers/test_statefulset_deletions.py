"""`StatefulSetDeletions`: when the pod cache has seen a worker StatefulSet's absence as the
StatefulSet cache does, so the pod controller may build a group from its cached leader.

Both informers run on scripted list/watch streams (no cluster): the StatefulSet cache lists
`w` at version 10 and the pod cache lists at version 15; their watches then deliver the events
of each case."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from leaderworkerset.controllers.memos import StatefulSetDeletions
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, STATEFULSET_CODEC, Pod, StatefulSet
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.store import Store
from tests.unit.runtime.builders import event, list_body, obj
from tests.unit.runtime.fakes import FakeListerWatcher

W = ObjectKey("default", "w")
FRESH = ObjectKey("default", "fresh")


@dataclass
class Caches:
    sts_lw: FakeListerWatcher = field(default_factory=FakeListerWatcher)
    pod_lw: FakeListerWatcher = field(default_factory=FakeListerWatcher)

    async def run(
        self, sts_events: list[bytes], pod_events: list[bytes], *, memory: int = 100
    ) -> StatefulSetDeletions:
        self.sts_lw.lists.append([list_body([obj("w", kind="StatefulSet", rv="5")], rv="10")])
        self.sts_lw.watches.append(list(sts_events))
        self.pod_lw.lists.append([list_body([], rv="15")])
        self.pod_lw.watches.append(list(pod_events))
        clock = FakeClock()
        sts: Informer[StatefulSet] = Informer("sts", self.sts_lw, Store(STATEFULSET_CODEC), clock=clock)
        pods: Informer[Pod] = Informer("pods", self.pod_lw, Store(POD_CODEC), clock=clock)
        deletions = StatefulSetDeletions(sts, pods, memory=memory)
        self.tasks = [asyncio.create_task(sts.run()), asyncio.create_task(pods.run())]
        # Once its script is played, each informer's next watch blocks (`blocked`).
        await asyncio.wait_for(asyncio.gather(self.sts_lw.blocked.wait(), self.pod_lw.blocked.wait()), 1)
        return deletions


@pytest.fixture
async def caches() -> AsyncIterator[Caches]:
    c = Caches()
    yield c
    for task in getattr(c, "tasks", []):
        task.cancel()
    await asyncio.gather(*getattr(c, "tasks", []), return_exceptions=True)


def sts_deleted(rv: str) -> bytes:
    return event("DELETED", obj("w", kind="StatefulSet", rv=rv))


def pod_at(rv: str) -> bytes:
    return event("ADDED", obj(f"p{rv}", rv=rv))


async def test_a_statefulset_never_deleted_needs_the_pods_where_statefulsets_were(caches: Caches) -> None:
    deletions = await caches.run([], [])
    assert deletions.seen_by_pods(FRESH)  # pods at 15, StatefulSets listed at 10


async def test_a_deletion_counts_once_the_pod_cache_reaches_its_version(caches: Caches) -> None:
    deletions = await caches.run([sts_deleted("20")], [pod_at("19")])
    assert not deletions.seen_by_pods(W)  # pods at 19: the leader's deletion may not be in yet


async def test_a_pod_cache_past_the_deletion_sees_it(caches: Caches) -> None:
    deletions = await caches.run([sts_deleted("20")], [pod_at("21")])
    assert deletions.seen_by_pods(W)


async def test_a_pod_cache_behind_the_statefulsets_when_first_asked_sees_nothing(caches: Caches) -> None:
    deletions = await caches.run([event("ADDED", obj("x", kind="StatefulSet", rv="30"))], [])
    # Asked first when the StatefulSet cache is at 30 and the pods at 15: everything waits.
    assert not deletions.seen_by_pods(FRESH)


async def test_forgotten_deletions_raise_the_floor(caches: Caches) -> None:
    events = [event("ADDED", obj(f"s{i}", kind="StatefulSet", rv=str(11 + i))) for i in range(2)]
    events += [event("DELETED", obj(f"s{i}", kind="StatefulSet", rv=str(20 + i))) for i in range(2)]
    deletions = await caches.run(events, [pod_at("20")], memory=1)
    # s0's deletion (at 20) was forgotten when s1's came in: every name now needs the pods at 20.
    assert deletions.seen_by_pods(FRESH)
    assert not deletions.seen_by_pods(ObjectKey("default", "s1"))  # deleted at 21
