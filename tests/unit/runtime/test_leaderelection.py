"""Lease leader election with a fake clock and an in-memory lease API with optimistic concurrency."""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.leaderelection import ElectionConfig, LeaderElector
from leaderworkerset.runtime.metrics import new_runtime_metrics
from leaderworkerset.runtime.resources import ResourceRef
from tests.unit.runtime.fakes import settle

NS = "lws-system"
NAME = "b8b2488c.x-k8s.io"


class FakeLeases:
    """One Lease, with 404 when absent and 409 on a stale resourceVersion."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("apiserver unreachable")

    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> dict[str, Any]:
        self._check()
        if self.lease is None:
            raise ApiStatusError(ApiStatus(code=404, reason="NotFound"))
        return copy.deepcopy(self.lease)

    async def create(self, ref: ResourceRef, obj: Any, namespace: str | None = None) -> dict[str, Any]:
        self._check()
        if self.lease is not None:
            raise ApiStatusError(ApiStatus(code=409, reason="AlreadyExists"))
        return self._store(obj)

    async def update(self, ref: ResourceRef, obj: Any, subresource: str | None = None) -> dict[str, Any]:
        self._check()
        assert self.lease is not None
        if obj["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiStatusError(ApiStatus(code=409, reason="Conflict"))
        return self._store(obj)

    def _store(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = copy.deepcopy(obj)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.lease)

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"].get("holderIdentity")


def elector(leases: FakeLeases, clock: FakeClock, identity: str, registry: CollectorRegistry | None = None):  # type: ignore[no-untyped-def]
    metrics = new_runtime_metrics(registry or CollectorRegistry())
    wall = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
    return LeaderElector(
        leases,
        ElectionConfig(namespace=NS, name=NAME, identity=identity),
        clock=clock,
        wall_clock=lambda: wall + datetime.timedelta(seconds=clock.now()),
        status_gauge=metrics.leader_election_master_status,
    ), metrics


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_first_elector_creates_lease_and_leads() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, metrics = elector(leases, clock, "a")
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 1)
    assert leases.holder == "a"
    assert leases.lease is not None
    assert leases.lease["spec"]["leaseDurationSeconds"] == 15
    assert leases.lease["spec"]["leaseTransitions"] == 0
    assert metrics.registry.get_sample_value("leader_election_master_status", {"name": NAME}) == 1
    await stop(task)
    assert leases.holder is None, "released on graceful shutdown"
    assert metrics.registry.get_sample_value("leader_election_master_status", {"name": NAME}) == 0


async def test_standby_waits_for_expiry_judged_by_local_clock() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, _ = elector(leases, clock, "a")
    b, _ = elector(leases, clock, "b")
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 1)
    tb = asyncio.create_task(b.run())
    await settle()
    assert not b.is_leader
    # a keeps renewing: b never takes over, however long it waits.
    for _ in range(20):
        clock.advance(2.0)
        await settle()
    assert not b.is_leader
    # a dies without releasing (cancelled hard, no release): b takes over one lease duration later.
    leases_before = copy.deepcopy(leases.lease)
    await stop(ta)
    leases.lease = leases_before  # undo the release to model a crash
    for _ in range(7):
        clock.advance(2.0)
        await settle()
    assert not b.is_leader, "14 s after the last renewal the lease (15 s) is still valid"
    # b saw the last renewal at most one retry period late, so it takes over within two more retries.
    for _ in range(2):
        clock.advance(2.0)
        await settle()
    assert b.is_leader
    assert leases.holder == "b"
    assert leases.lease is not None
    assert leases.lease["spec"]["leaseTransitions"] == 1
    await stop(tb)


async def test_release_lets_standby_take_over_without_waiting() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, _ = elector(leases, clock, "a")
    b, _ = elector(leases, clock, "b")
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 1)
    tb = asyncio.create_task(b.run())
    await settle()
    await stop(ta)
    clock.advance(2.0)  # b's next retry sees an empty holder
    await settle()
    assert b.is_leader
    await stop(tb)


@pytest.mark.parametrize(
    ("outage", "want_lost"),
    [
        pytest.param(8.0, False, id="outage shorter than renew deadline keeps leadership"),
        pytest.param(12.0, True, id="outage beyond renew deadline loses leadership"),
    ],
)
async def test_renew_deadline(outage: float, want_lost: bool) -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, _ = elector(leases, clock, "a")
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 1)
    clock.advance(2.0)
    await settle()
    leases.down = True
    elapsed = 0.0
    while elapsed < outage:
        clock.advance(1.0)
        elapsed += 1.0
        await settle()
    leases.down = False
    clock.advance(2.0)
    await settle()
    assert task.done() == want_lost
    assert a.is_leader != want_lost
    await stop(task)


def test_config_requires_ordered_durations() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        ElectionConfig(namespace=NS, lease_duration=5, renew_deadline=10)


class CountingLeases(FakeLeases):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def get(self, ref: ResourceRef, namespace: str | None, name: str) -> dict[str, Any]:
        self.calls.append("GET")
        return await super().get(ref, namespace, name)

    async def update(self, ref: ResourceRef, obj: Any, subresource: str | None = None) -> dict[str, Any]:
        self.calls.append("PUT")
        return await super().update(ref, obj, subresource)


async def test_a_leader_renews_with_one_put_per_period_and_reads_again_after_a_conflict() -> None:
    """As client-go: no GET while the lease it wrote is valid; a foreign write conflicts, then it reads."""
    leases, clock = CountingLeases(), FakeClock()
    a, _ = elector(leases, clock, "a")
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 1)
    leases.calls.clear()
    for _ in range(5):
        clock.advance(2.0)
        await settle()
    assert len(leases.calls) >= 4, leases.calls  # one renewal per retry period
    assert set(leases.calls) == {"PUT"}, "a valid lease is renewed without reading it"
    assert leases.holder == "a"
    assert leases.lease is not None
    leases.lease["metadata"]["resourceVersion"] = "foreign"  # someone else wrote the Lease
    leases.calls.clear()
    clock.advance(2.0)
    await settle()
    assert leases.calls[:3] == ["PUT", "GET", "PUT"], "the conflict sends it back to a read"
    assert leases.lease["metadata"]["resourceVersion"] != "foreign"
    assert a.is_leader
    await stop(task)
