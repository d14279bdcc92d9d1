"""Manager lifecycle with a fake clock and in-memory leases: leader-gated controllers, loss, stop."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.controller import Controller, Result
from leaderworkerset.runtime.manager import (
    CacheSyncTimeoutError,
    LeadershipLostError,
    Manager,
    ManagerOptions,
    split_address,
)
from leaderworkerset.runtime.objects import ObjectKey
from tests.unit.runtime.fakes import settle
from tests.unit.runtime.test_leaderelection import FakeLeases


class StubClient(FakeLeases):
    """Enough of KubeClient for a manager with no informers and no servers."""

    def instrument(self, requests_total: Counter) -> None:
        return None


OPTIONS = ManagerOptions(
    health_probe_bind_address="0",
    metrics_bind_address="0",
    election_namespace="lws-system",
    handle_signals=False,
    freeze_gc_after_sync=False,
)


def manager_with_controller(client: Any, clock: FakeClock, options: ManagerOptions = OPTIONS):  # type: ignore[no-untyped-def]
    manager = Manager(client, options, registry=CollectorRegistry(), clock=clock)
    seen: list[ObjectKey] = []

    async def reconcile(key: ObjectKey) -> Result | None:
        seen.append(key)
        return None

    controller = Controller("demo", reconcile, clock=clock, metrics=manager.metrics)
    manager.add_controller(controller)
    return manager, controller, seen


async def test_controllers_start_only_when_leading_and_stop_gracefully() -> None:
    leases, clock = StubClient(), FakeClock()
    manager, controller, seen = manager_with_controller(leases, clock)
    every_replica = asyncio.Event()

    async def webhook_server() -> None:
        every_replica.set()
        await asyncio.Event().wait()

    manager.add_runnable("webhooks", webhook_server)
    leases.down = True  # cannot acquire yet
    task = asyncio.create_task(manager.run())
    await settle()
    assert every_replica.is_set(), "runnables that are not leader-only start on every replica"
    controller.queue.add(ObjectKey("ns", "a"))
    await settle()
    assert seen == [], "a standby does not reconcile"

    leases.down = False
    clock.advance(2.0)
    await settle()
    assert seen == [ObjectKey("ns", "a")]
    assert leases.holder is not None

    manager.stop()
    await asyncio.wait_for(task, 1)
    assert leases.holder is None, "lease released on graceful stop"
    assert controller.queue.shutting_down


async def test_lost_leadership_stops_controllers_and_raises() -> None:
    leases, clock = StubClient(), FakeClock()
    manager, controller, _ = manager_with_controller(leases, clock)
    task = asyncio.create_task(manager.run())
    await settle()
    assert manager.elector is not None
    assert manager.elector.is_leader
    leases.down = True
    for _ in range(12):
        clock.advance(1.0)
        await settle()
    with pytest.raises(LeadershipLostError):
        await asyncio.wait_for(task, 1)
    assert controller.queue.shutting_down


async def test_without_leader_election_controllers_start_at_once() -> None:
    clock = FakeClock()
    options = ManagerOptions(
        health_probe_bind_address="0",
        metrics_bind_address="0",
        leader_elect=False,
        handle_signals=False,
        freeze_gc_after_sync=False,
    )
    manager, controller, seen = manager_with_controller(StubClient(), clock, options)
    task = asyncio.create_task(manager.run())
    controller.queue.add(ObjectKey("ns", "b"))
    await settle()
    assert seen == [ObjectKey("ns", "b")]
    manager.stop()
    await asyncio.wait_for(task, 1)


async def test_controllers_wait_for_their_gates() -> None:
    clock = FakeClock()
    options = ManagerOptions(
        health_probe_bind_address="0",
        metrics_bind_address="0",
        leader_elect=False,
        handle_signals=False,
        freeze_gc_after_sync=False,
    )
    manager, controller, seen = manager_with_controller(StubClient(), clock, options)
    certificates_ready = asyncio.Event()
    manager.add_controller_gate(certificates_ready.wait)
    task = asyncio.create_task(manager.run())
    controller.queue.add(ObjectKey("ns", "c"))
    await settle()
    assert seen == [], "no reconcile before the gate opens"

    certificates_ready.set()
    await settle()

    assert seen == [ObjectKey("ns", "c")]
    manager.stop()
    await asyncio.wait_for(task, 1)


@pytest.mark.parametrize(
    ("address", "want"),
    [
        pytest.param(":8081", ("0.0.0.0", 8081), id="port only binds all interfaces"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="explicit host, ephemeral port"),
        pytest.param("0", None, id="zero disables"),
        pytest.param("", None, id="empty disables"),
    ],
)
def test_split_address(address: str, want: tuple[str, int] | None) -> None:
    assert split_address(address) == want


async def test_sigterm_stops_the_manager_gracefully() -> None:
    clock = FakeClock()
    options = ManagerOptions(
        health_probe_bind_address="0",
        metrics_bind_address="0",
        leader_elect=False,
        handle_signals=True,
        freeze_gc_after_sync=False,
    )
    manager, controller, _ = manager_with_controller(StubClient(), clock, options)
    task = asyncio.create_task(manager.run())
    await settle()
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(task, 5)
    assert controller.queue.shutting_down
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "handlers are removed after the run"


class NeverSyncs:
    """An informer whose list keeps failing (e.g. its CRD is not installed)."""

    name = "leaderworkersets.leaderworkerset.x-k8s.io"

    def has_synced(self) -> bool:
        return False

    async def wait_for_sync(self) -> None:
        await asyncio.Event().wait()

    async def run(self) -> None:
        await asyncio.Event().wait()


async def test_cache_sync_timeout_fails_the_manager_and_releases_the_lease() -> None:
    leases, clock = StubClient(), FakeClock()
    manager, _controller, seen = manager_with_controller(leases, clock)
    manager.cache.informers[NeverSyncs.name] = NeverSyncs()  # type: ignore[assignment]
    task = asyncio.create_task(manager.run())
    await settle()
    assert manager.elector is not None
    assert manager.elector.is_leader
    clock.advance(119.0)
    await settle()
    assert not task.done()
    clock.advance(1.0)
    with pytest.raises(CacheSyncTimeoutError, match="leaderworkersets"):
        await asyncio.wait_for(task, 1)
    assert seen == []
    assert leases.holder is None
