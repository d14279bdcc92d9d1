"""Shared fixtures: real local clusters, async clients, fresh namespaces.

* ``apiserver_cluster`` — etcd + kube-apiserver (the test plays the
  controllers and the kubelet); ``full_cluster`` — plus controller-manager,
  scheduler and kwok fake nodes. Both are session-scoped: one of each per
  xdist worker, started on first use.
* ``kube`` / ``full_kube`` — lightkube AsyncClients for them.
* ``namespace`` / ``full_namespace`` — a fresh namespace per test.

When a test that used a cluster fails, the tail of every component's log is
attached to the report.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from leaderworkerset.devcluster.cluster import LocalCluster
from tests.support import clusters


def _worker(request: pytest.FixtureRequest) -> str:
    return str(getattr(request.config, "workerinput", {}).get("workerid", "main"))


@pytest.fixture(scope="session")
def apiserver_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("apiserver", _worker(request))
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="session")
def full_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("full", _worker(request))
    yield cluster
    clusters.stop(cluster)


def _client(cluster: LocalCluster) -> AsyncClient:
    return AsyncClient(config=KubeConfig.from_file(str(cluster.kubeconfig)), field_manager="lws-tests")


@pytest.fixture(scope="session")
async def kube(apiserver_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = _client(apiserver_cluster)
    yield client
    await client.close()


@pytest.fixture(scope="session")
async def full_kube(full_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = _client(full_cluster)
    yield client
    await client.close()


async def _fresh_namespace(client: AsyncClient, request: pytest.FixtureRequest) -> str:
    base = "".join(ch if ch.isalnum() else "-" for ch in request.node.name.lower())[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    await client.create(Namespace(metadata=ObjectMeta(name=name)))
    return name


@pytest.fixture
async def namespace(kube: AsyncClient, request: pytest.FixtureRequest) -> str:
    return await _fresh_namespace(kube, request)


@pytest.fixture
async def full_namespace(full_kube: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = await _fresh_namespace(full_kube, request)
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
