"""Controller kills: SIGKILL `lws manager` at seeded random moments while the whole workload mix rolls
out and scales, with real failures injected into healthy groups between the kills.

The run is recorded from before the first create (`Recorder`) and judged by the pure checks of
`invariants.py` (`scenario.all_violations`); its end state must equal that of the same mix run
without faults (the `baseline` fixture). Sizes: `KILLS`/`FAILURES` (CI: a few;
``LWS_CHAOS_SIZE=full``: 20 kills).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NAMESPACES
from tests.chaos.faults import invariants as inv
from tests.chaos.faults import scenario, workload
from tests.chaos.faults.conftest import report_figures, running
from tests.chaos.faults.recorder import Recorder
from tests.chaos.sizes import pick
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

KILLS = pick(ci=3, full=20)
FAILURES = pick(ci=2, full=6)
# Seconds between two faults: short enough that kills land mid-rollout, long enough that the
# restarted manager gets some work done before the next one.
PAUSE = (0.3, 3.0)


@pytest.fixture
async def manager(full_cluster: LocalCluster, chaos_api: KubeClient) -> AsyncIterator[ManagerProcess]:
    async with running(ManagerProcess(full_cluster, name="lws-manager-chaos-kills")) as proc:
        yield proc


async def inject_failure(rest: RestClient, recorder: Recorder, ns: str, rng: random.Random) -> str:
    """Restart a worker container of a healthy, up-to-date group of the failure target (as a kubelet
    reports a crash); returns the group."""

    def candidates() -> list[str]:
        healthy = inv.failure_candidates(recorder.snapshot(), workload.FAILURE_TARGET)
        assert healthy, "no healthy up-to-date group to fail yet"
        return healthy

    group = rng.choice(await eventually(candidates, timeout=LONG_TIMEOUT))
    pod = await asyncio.to_thread(chaos.restart_container, rest, ns, f"{workload.FAILURE_TARGET}-{group}-1")
    recorder.inject_failure(int(pod["metadata"]["resourceVersion"]), workload.FAILURE_TARGET, group)
    return group


def kills_and_failures(
    manager: ManagerProcess, rest: RestClient, ns: str, rng: random.Random, kills: int, failures: int
) -> scenario.Fault:
    async def fault(recorder: Recorder, change: scenario.Change) -> dict[str, Any]:
        plan = ["kill"] * kills + ["fail"] * failures
        rng.shuffle(plan)
        down: list[float] = []
        failed: list[str] = []
        await change()
        for action in plan:
            await asyncio.sleep(rng.uniform(*PAUSE))  # a random point of the rollout, not a wait for it
            if action == "kill":
                manager.kill()
                killed = time.monotonic()
                await manager.start()
                down.append(round(time.monotonic() - killed, 1))
            else:
                failed.append(await inject_failure(rest, recorder, ns, rng))
        return {"kills": len(down), "failures": len(failed), "down_seconds": down}

    return fault


async def test_manager_kills_mid_rollout_lose_no_group_and_restart_none_for_nothing(
    chaos_api: KubeClient,
    full_cluster: LocalCluster,
    baseline: dict[str, Any],
    manager: ManagerProcess,
    rng: random.Random,
) -> None:
    ns = await scenario.new_namespace(chaos_api, "chaos-kills")
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    try:
        fault = kills_and_failures(manager, rest, ns, rng, KILLS, FAILURES)
        changes, figures = await scenario.run_mix(chaos_api, ns, fault)
    finally:
        await chaos_api.delete(NAMESPACES, None, ns)
    report_figures("kills", **figures)
    assert (figures["kills"], figures["failures"]) == (KILLS, FAILURES), figures
    assert manager.starts == KILLS + 1
    violations = scenario.all_violations(changes)
    assert not violations, violations
    report_figures("kills-end-state", **scenario.expect_same_end_state(changes, baseline))
