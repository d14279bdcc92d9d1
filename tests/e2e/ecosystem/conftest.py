"""A full local cluster with Kueue (tests/support/kueue.py) beside our webhooks, and one controller at
a time: ours, or upstream's v0.9.0 Go manager for the comparison.

Its own cluster, because Kueue's pod webhook then sees every pod created in it, and because the
tests decide which LeaderWorkerSet controller runs. Our webhook server runs throughout
(`--webhooks-only`), so what changes between ours and upstream's is exactly the reconciling side.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import KubeClient
from tests.e2e.install.conftest import started, stopped
from tests.support import clusters
from tests.support.kueue import KueueManager
from tests.support.manager import ManagerProcess, UpstreamControllers

OURS = "ours"
UPSTREAM = "upstream-v0.9.0"
RUNNING: list[KueueManager] = []  # their log tails go into a failing test's report


@pytest.fixture(scope="package")
def kueue_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = ClusterOptions(shape="full", nodes=4, die_with_parent=True, supervise=True)
    yield from clusters.own(request, "kueue", options)


@pytest.fixture(scope="package")
async def kueue_api(kueue_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async for api in clusters.api_with_crds(kueue_cluster):
        yield api


class Controllers:
    """Which LeaderWorkerSet controller runs beside our webhooks; `use` swaps it."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.which = ""
        self.process: ManagerProcess | None = None
        self.starts = 0

    async def use(self, which: str) -> None:
        if which == self.which and self.process is not None and self.process.running:
            return
        await self.stop()
        self.starts += 1
        name = f"lws-controllers-{which}-{self.starts}"
        if which == OURS:
            process = ManagerProcess(self.cluster, name, extra_args=("--disable-webhooks",))
        else:
            process = UpstreamControllers(self.cluster, tools.ensure_tool(tools.UPSTREAM_LWS), name)
        self.process = await started(process)
        self.which = which

    async def stop(self) -> None:
        if self.process is not None:
            await stopped(self.process)
        self.process, self.which = None, ""


@pytest.fixture(scope="package")
async def kueue_env(kueue_cluster: LocalCluster, kueue_api: KubeClient) -> AsyncIterator[Controllers]:
    """Our webhooks and Kueue running; yields the controller switch (nothing reconciles yet)."""
    webhooks = ManagerProcess(kueue_cluster, "lws-webhooks-kueue", extra_args=("--webhooks-only",))
    await started(webhooks, kueue_api)
    kueue = KueueManager(kueue_cluster, kueue_api)
    controllers = Controllers(kueue_cluster)
    RUNNING.append(kueue)
    try:
        await kueue.install()
        yield controllers
    finally:
        await controllers.stop()
        await kueue.stop()
        RUNNING.remove(kueue)
        await stopped(webhooks)


@pytest.fixture
async def ours(kueue_env: Controllers) -> Controllers:
    """Our controllers are the ones running."""
    await kueue_env.use(OURS)
    return kueue_env


@pytest.fixture
async def kueue_ns(kueue_cluster: LocalCluster, request: pytest.FixtureRequest) -> str:
    kube = clusters.client_for(kueue_cluster)
    try:
        return await clusters.fresh_namespace(kube, request)
    finally:
        await kube.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for kueue in RUNNING:
            report.sections.append((f"{kueue.name} log", kueue.log_tail(60)))
