"""Fault-injection fixtures: the full local cluster with our CRDs, a dict-level client, a seeded RNG.

Each test runs its own `lws manager` process(es) (it kills them, runs two, or routes one through a
proxy), so none of the e2e suite's shared manager is used here.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import NAMESPACES
from tests.support.manager import ManagerProcess

MANAGERS: list[ManagerProcess] = []
FIGURES_ENV = "LWS_CHAOS_FIGURES"


@pytest.fixture(scope="session")
async def chaos_api(full_cluster: LocalCluster, full_kube: AsyncClient) -> AsyncIterator[KubeClient]:
    await install_crds(full_kube)
    client = new_client(
        ClientOptions(kubeconfig=str(full_cluster.kubeconfig), qps=200, burst=400, field_manager="lws-chaos")
    )
    yield client
    await client.close()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """Seeded by LWS_CHAOS_SEED (default 12); the seed is in the test's report when it fails."""
    seed = int(os.environ.get("LWS_CHAOS_SEED", "12"))
    request.node.user_properties.append(("seed", seed))
    return random.Random(f"{seed}:{request.node.name}")


@contextlib.asynccontextmanager
async def running(manager: ManagerProcess) -> AsyncIterator[ManagerProcess]:
    """Start ``manager`` (its log goes into a failing test's report) and stop it afterwards."""
    MANAGERS.append(manager)
    try:
        await manager.start()
        yield manager
    finally:
        await manager.stop()
        MANAGERS.remove(manager)


def report_figures(test: str, **figures: Any) -> None:
    """Print the run's figures; with LWS_CHAOS_FIGURES=<file>, also append them there as a JSON line."""
    line = json.dumps({"test": test, "seed": int(os.environ.get("LWS_CHAOS_SEED", "12")), **figures})
    print(f"CHAOS {line}")
    if path := os.environ.get(FIGURES_ENV):
        with open(path, "a") as out:
            out.write(line + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, value in item.user_properties:
            report.sections.append((f"chaos {name}", str(value)))
        for manager in MANAGERS:
            report.sections.append((f"{manager.name} log", manager.log_tail(60)))


@pytest.fixture(scope="session")
async def baseline(full_cluster: LocalCluster, chaos_api: KubeClient) -> dict[str, Any]:
    """The end state of the workload mix run without any fault (normalised, see `final_state`), by a
    manager of its own; every fault test must end in the same state."""
    from tests.chaos.faults import invariants as inv
    from tests.chaos.faults import scenario

    ns = await scenario.new_namespace(chaos_api, "chaos-baseline")
    try:
        async with running(ManagerProcess(full_cluster, name="lws-manager-chaos-baseline")):
            changes, _ = await scenario.run_mix(chaos_api, ns)
    finally:
        await chaos_api.delete(NAMESPACES, None, ns)
    violations = scenario.all_violations(changes)
    assert not violations, f"the run without faults already breaks an invariant: {violations}"
    return inv.final_state(changes)
