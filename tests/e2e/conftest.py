"""E2E fixtures: the full local cluster with our CRDs and `lws manager` running as a separate process.

* ``lws_manager`` — session-scoped: CRDs installed into ``full_cluster``, one manager process
  (controllers + admission webhooks) shared by every e2e test; a test may kill and restart it
  (``restartable_manager`` guarantees it runs again afterwards).
* ``api`` — dict-level client (``KubeClient``) of the full cluster, the same vocabulary as the
  integration tests' ``expect_*`` helpers.
* ``ns`` — a fresh namespace with the manager running.

When an e2e test fails, the tail of the manager's log is attached to the report beside the
cluster components' logs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support.manager import ManagerProcess

MANAGERS: list[ManagerProcess] = []


@pytest.fixture(scope="session")
async def api(full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(
        ClientOptions(
            kubeconfig=str(full_cluster.kubeconfig), qps=200, burst=400, field_manager="lws-e2e-tests"
        )
    )
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def lws_manager(full_cluster: LocalCluster, full_kube: AsyncClient) -> AsyncIterator[ManagerProcess]:
    await install_crds(full_kube)
    manager = ManagerProcess(full_cluster)
    MANAGERS.append(manager)
    await manager.start()
    yield manager
    await manager.stop()
    MANAGERS.remove(manager)


@pytest.fixture
async def ns(full_namespace: str, lws_manager: ManagerProcess) -> str:
    """A fresh namespace; the shared manager is running."""
    if not lws_manager.running:  # a previous test killed it and failed before restarting it
        await lws_manager.start()
    return full_namespace


@pytest.fixture
async def restartable_manager(lws_manager: ManagerProcess) -> AsyncIterator[ManagerProcess]:
    """The shared manager, for a test that kills it; it is running again when the test ends."""
    yield lws_manager
    if not lws_manager.running:
        await lws_manager.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for manager in MANAGERS:
            report.sections.append((f"{manager.name} log", manager.log_tail(60)))
