"""API server faults under the workload mix: kube-apiserver restarted mid-rollout; the manager's
connections cut at seeded random moments (a TCP proxy between it and the API server); and `410 Gone`
forced by an etcd compaction while the manager is cut off, so that its watches cannot resume.

The manager must re-list, converge to the state of a run without faults, and never act on stale
state: every pod delete the recorder saw is checked against the world at that moment
(`invariants.unjustified_pod_deletions`, `deletes_of_unknown_objects`).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NAMESPACES
from tests.chaos.faults import scenario
from tests.chaos.faults.conftest import report_figures, running
from tests.chaos.faults.recorder import Recorder
from tests.chaos.sizes import pick
from tests.support.manager import ManagerProcess
from tests.support.tcpproxy import TcpProxy
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

RESTARTS = pick(ci=1, full=3)
CUTS = pick(ci=8, full=60)
CUT_GAP = (0.2, 2.0)  # seconds between two cuts
EXPIRED = "watch expired, relisting"  # the reflector's log line on 410 Gone


def kubeconfig_via(cluster: LocalCluster, port: int, path: Path) -> Path:
    """The cluster's admin kubeconfig, but reaching the API server through 127.0.0.1:<port>."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def relists(manager: ManagerProcess) -> int:
    """How often the manager's informers re-listed after 410 Gone, from its JSON log."""
    count = 0
    for line in manager.log_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        count += EXPIRED in (entry.get("msg"), entry.get("event"))
    return count


@pytest.fixture
async def wire(full_cluster: LocalCluster) -> AsyncIterator[TcpProxy]:
    proxy = TcpProxy([full_cluster.state.ports["kube-apiserver"]])
    await proxy.start()
    yield proxy
    await proxy.stop()


@pytest.fixture
async def manager(
    full_cluster: LocalCluster, chaos_api: KubeClient, wire: TcpProxy
) -> AsyncIterator[ManagerProcess]:
    """`lws manager` whose every API call goes through ``wire``."""
    kubeconfig = kubeconfig_via(full_cluster, wire.port, full_cluster.workdir / "via-proxy.kubeconfig")
    proc = ManagerProcess(full_cluster, name="lws-manager-chaos-apiserver", kubeconfig=kubeconfig)
    async with running(proc):
        yield proc


async def run_and_check(
    api: KubeClient, prefix: str, fault: scenario.Fault, baseline: dict[str, Any]
) -> dict[str, Any]:
    ns = await scenario.new_namespace(api, prefix)
    try:
        changes, figures = await scenario.run_mix(api, ns, fault)
    finally:
        await api.delete(NAMESPACES, None, ns)
    violations = scenario.all_violations(changes)
    assert not violations, violations
    figures.update(scenario.expect_same_end_state(changes, baseline))
    return figures


async def test_apiserver_restart_mid_rollout(
    chaos_api: KubeClient,
    full_cluster: LocalCluster,
    baseline: dict[str, Any],
    manager: ManagerProcess,
    rng: random.Random,
) -> None:
    async def restarts(recorder: Recorder, change: scenario.Change) -> dict[str, Any]:
        del recorder
        await change()
        for _ in range(RESTARTS):
            await asyncio.sleep(rng.uniform(0.5, 3.0))  # a random point of the rollout
            await asyncio.to_thread(full_cluster.restart_apiserver)
        return {"apiserver_restarts": RESTARTS}

    figures = await run_and_check(chaos_api, "chaos-apiserver-restart", restarts, baseline)
    report_figures("apiserver-restart", **figures)
    assert manager.running, "the manager must ride out a restart, not crash"
    assert manager.starts == 1


async def test_connections_cut_at_random_mid_rollout(
    chaos_api: KubeClient,
    baseline: dict[str, Any],
    manager: ManagerProcess,
    wire: TcpProxy,
    rng: random.Random,
) -> None:
    async def cuts(recorder: Recorder, change: scenario.Change) -> dict[str, Any]:
        del recorder
        await change()
        broken = await wire.cut_at_random(rng, *CUT_GAP, times=CUTS)
        return {"cuts": len(broken), "connections_cut": sum(broken)}

    figures = await run_and_check(chaos_api, "chaos-cuts", cuts, baseline)
    report_figures("connection-cuts", **figures)
    assert figures["cuts"] == CUTS
    assert figures["connections_cut"] >= CUTS, "a cut that broke nothing injected no fault"
    assert manager.running
    assert manager.starts == 1


async def test_410_gone_after_compaction_makes_the_manager_relist_and_converge(
    chaos_api: KubeClient,
    full_cluster: LocalCluster,
    baseline: dict[str, Any],
    manager: ManagerProcess,
    wire: TcpProxy,
) -> None:
    """Cut the manager off, change the mix, compact etcd and restart the API server (its watch cache
    starts over at the compacted revision): no resourceVersion the manager knew is servable, so each
    watch it resumes gets 410 Gone and it must list again, seeing the change it missed."""
    before = relists(manager)

    async def gone(recorder: Recorder, change: scenario.Change) -> dict[str, Any]:
        del recorder
        wire.refuse = True
        wire.cut()
        try:
            await change()
            revision = await asyncio.to_thread(full_cluster.compact_etcd)
            await asyncio.to_thread(full_cluster.restart_apiserver)
        finally:
            wire.refuse = False
        await eventually(
            lambda: relists(manager) > before, timeout=LONG_TIMEOUT, message="no relist after 410"
        )
        return {"compacted_revision": revision}

    figures = await run_and_check(chaos_api, "chaos-410", gone, baseline)
    figures["manager_relists_after_410"] = relists(manager) - before
    report_figures("410-gone", **figures)
    assert manager.running
    assert manager.starts == 1
