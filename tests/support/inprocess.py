"""Controllers running in-process on the test's event loop against a local cluster."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from leaderworkerset.controllers.setup import RegisteredControllers, register_controllers
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.runtime.manager import Manager
from tests.support.manager import in_process_options


@contextlib.asynccontextmanager
async def running_controllers(cluster: LocalCluster, **register: Any) -> AsyncIterator[RegisteredControllers]:
    """A manager without leader election, probes or metrics, with `register_controllers(**register)`,
    whose caches have synced; stopped (gracefully, then abandoned) on exit."""
    client = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig)))
    manager = Manager(client, in_process_options())
    registered = register_controllers(manager, **register)
    task = asyncio.create_task(manager.run(), name="in-process-manager")
    try:
        await asyncio.wait_for(manager.cache.wait_for_sync(), timeout=60)
        yield registered
    finally:
        manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=15)
        await client.close()
