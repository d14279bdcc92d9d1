"""Controllers running in-process on the test's event loop against a local cluster: the one way
tests build and start a manager inside the test process (`lws manager` as a separate process is
tests/support/manager.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from leaderworkerset.controllers.setup import RegisteredControllers, register_controllers
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.manager import Manager, ManagerOptions


def in_process_options() -> ManagerOptions:
    """Options of a manager running on the test's event loop: no leader election, no ports."""
    return ManagerOptions(
        leader_elect=False,
        health_probe_bind_address="0",
        metrics_bind_address="0",
        handle_signals=False,
        graceful_shutdown_timeout=5.0,
    )


def in_process_manager(client: KubeClient, **register: Any) -> tuple[Manager, RegisteredControllers]:
    """A manager with `in_process_options()` and `register_controllers(**register)`, not started."""
    manager = Manager(client, in_process_options())
    return manager, register_controllers(manager, **register)


@contextlib.asynccontextmanager
async def running_controllers(
    cluster: LocalCluster, *, client: KubeClient | None = None, **register: Any
) -> AsyncIterator[RegisteredControllers]:
    """An `in_process_manager` whose caches have synced; stopped (gracefully, then abandoned) on
    exit. `client` (default: a new one with the cluster's admin kubeconfig) becomes the manager's
    and is closed on exit."""
    client = client or new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig)))
    manager, registered = in_process_manager(client, **register)
    task = asyncio.create_task(manager.run(), name="in-process-manager")
    try:
        await asyncio.wait_for(manager.cache.wait_for_sync(), timeout=60)
        yield registered
    finally:
        manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=15)
        await client.close()
