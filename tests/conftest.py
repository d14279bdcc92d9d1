"""Shared fixtures: real local clusters, async clients, fresh namespaces.

* ``apiserver_cluster`` — etcd + kube-apiserver (the test plays the
  controllers and the kubelet); ``full_cluster`` — plus controller-manager,
  scheduler and kwok fake nodes. Both are session-scoped: one of each per
  xdist worker, started on first use.
* ``kube`` / ``full_kube`` — lightkube AsyncClients for them.
* ``namespace`` / ``full_namespace`` — a fresh namespace per test.

When a test that used a cluster fails, the tail of every component's log is
attached to the report.

With pytest-xdist (`make test` runs `-n N --dist loadgroup`), tests/support/parallel.py decides which
tests share a worker and which run alone.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Namespace

from leaderworkerset.controllers import informers
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.logging import configure_logging
from tests.support import clusters
from tests.support.parallel import (  # noqa: F401 (hooks: how xdist shares out the tests)
    pytest_collection_modifyitems,
    pytest_xdist_make_scheduler,
)

# Every manager the suite starts, in process or as a child, checks that no reader changes a cached
# dict the informers share between reads (controllers/informers.py).
os.environ.setdefault("LWS_CHECK_SHARED_VIEWS", "1")


def pytest_configure(config: pytest.Config) -> None:
    # In-process controllers log as `lws manager` does on a console: structlog's unconfigured default
    # renders each error's traceback with rich, blocking the test's event loop for tens of ms.
    configure_logging(json=False)


@pytest.fixture(autouse=True)
def _shared_views_unchanged() -> Iterator[None]:
    informers.CHANGED_VIEWS.clear()
    yield
    assert not informers.CHANGED_VIEWS, f"shared cache views changed by a reader: {informers.CHANGED_VIEWS}"


@pytest.fixture(scope="session")
def apiserver_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("apiserver", clusters.worker_id(request))
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="session")
def full_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("full", clusters.worker_id(request))
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="session")
async def kube(apiserver_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = clusters.client_for(apiserver_cluster)
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def full_kube(full_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = clusters.client_for(full_cluster)
    yield client
    await client.close()


@pytest.fixture
async def namespace(kube: AsyncClient, request: pytest.FixtureRequest) -> str:
    return await clusters.fresh_namespace(kube, request)


@pytest.fixture
async def full_namespace(full_kube: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = await clusters.fresh_namespace(full_kube, request)
    yield name
    # The namespace controller runs in the full shape: deleting frees fake-node capacity.
    await full_kube.delete(Namespace, name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and clusters.STARTED:
        for cluster in clusters.STARTED:
            report.sections.append((f"cluster {cluster.state.name} component logs", cluster.log_report(20)))
