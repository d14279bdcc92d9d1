"""Node faults under the Ray and JAX examples (docs/examples): a node lost for good (its kubelet frozen,
then declared out of service, as Kubernetes' non-graceful node shutdown has an operator do), a node cut
off the network for a minute and plugged back in, and containerd restarted under running groups. The
groups come back on the nodes left, none is recreated twice or lost, and a container runtime restart
stops nothing."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.realnodes import addresses, fleet, network
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NODES
from tests.e2e.realnodes.test_failures import ledger
from tests.support import workloads
from tests.support.objects import is_ready, uid
from tests.support.wait import LONG_TIMEOUT, consistently, eventually
from tests.support.workloads import FORMATION_TIMEOUT, Example, Groups, Obj, available, names

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]

OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
# The fault's length, not a wait for anything: longer than the node monitor's grace period (the node turns
# NotReady, its pods unready) and shorter than the default 300 s toleration of `unreachable` (nothing is
# evicted): a network blip that the groups must ride out.
CUT_SECONDS = 60


def real_node(name: str) -> addresses.RealNode:
    return addresses.RealNode(int(name.removeprefix(addresses.NODE_NAME_PREFIX)))


async def node_ready(api: KubeClient, name: str) -> bool:
    return is_ready(await api.get(NODES, None, name))


async def node_not_ready(api: KubeClient, name: str) -> bool:
    return not await node_ready(api, name)


async def taints_of(api: KubeClient, name: str) -> list[Obj]:
    return list((await api.get(NODES, None, name))["spec"].get("taints") or [])


@asynccontextmanager
async def kubelet_frozen(cluster: LocalCluster, api: KubeClient, node: str) -> AsyncIterator[None]:
    """The node's kubelet stopped (SIGSTOP: alive and silent, as on a hung machine) until the block
    ends; then it resumes, the node gets back the taints it had and is Ready again."""
    taints = await taints_of(api, node)
    kubelet = cluster.state.pids[f"{node}-kubelet"]
    os.kill(kubelet, signal.SIGSTOP)
    try:
        yield
    finally:
        await api.merge_patch(NODES, None, node, {"spec": {"taints": taints or None}})
        os.kill(kubelet, signal.SIGCONT)
        await eventually(lambda: node_ready(api, node), timeout=LONG_TIMEOUT, message=f"{node} Ready again")


def groups_on(groups: Groups, node: str) -> set[str]:
    return {g for g, pods in groups.items() if any(p["spec"]["nodeName"] == node for p in pods.values())}


def assert_serving_with_every_pod(groups: Groups, example: Example) -> None:
    for group in groups.values():
        answer = workloads.ask(group["0"]["status"]["podIP"], example)
        assert example.pods_that_took_part(answer) == names(group), answer


async def test_groups_on_a_lost_node_come_back_on_the_nodes_left(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await workloads.apply_example(installed, example_ns, example)
    before = await available(real_api, example_ns, example)
    node = before["0"]["1"]["spec"]["nodeName"]
    lost = groups_on(before, node)
    async with kubelet_frozen(installed, real_api, node):
        await eventually(
            lambda: node_not_ready(real_api, node), timeout=LONG_TIMEOUT, message=f"{node} NotReady"
        )
        # The node is gone for good and the operator says so: with the out-of-service taint its pods are
        # evicted and the pod garbage collector deletes them, which a silent kubelet would never confirm.
        await real_api.merge_patch(
            NODES, None, node, {"spec": {"taints": [*await taints_of(real_api, node), OUT_OF_SERVICE]}}
        )

        async def back() -> Groups | None:
            groups = await workloads.groups_of(real_api, example_ns, example)
            for g in lost:
                group = groups.get(g, {})
                if not workloads.whole_and_ready(group, example.size) or groups_on({g: group}, node):
                    return None
            return groups

        after = await eventually(back, timeout=FORMATION_TIMEOUT, interval=0.5, message="groups back")
        assert_serving_with_every_pod({g: after[g] for g in lost}, example)
        for g in lost:
            assert not set(workloads.uids(after[g]).values()) & set(workloads.uids(before[g]).values())
        for g in set(before) - lost:
            assert workloads.uids(after[g]) == workloads.uids(before[g]), f"group {g} was not on {node}"
        entries = await ledger(real_api, example_ns, example.name)
        recreated = sorted(e["group"] for e in entries if e["action"] == "recreated")
        assert recreated == sorted(lost), workloads.brief(entries)


async def test_a_node_cut_off_for_a_minute_recreates_no_group_twice_and_loses_none(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await workloads.apply_example(installed, example_ns, example)
    before = await available(real_api, example_ns, example)
    node = before["0"]["1"]["spec"]["nodeName"]
    leaders: dict[str, set[str]] = {g: {uid(group["0"])} for g, group in before.items()}

    async def follow_leaders() -> None:  # every leader incarnation of every group while the test runs
        while True:
            for g, group in (await workloads.groups_of(real_api, example_ns, example)).items():
                if "0" in group:
                    leaders.setdefault(g, set()).add(uid(group["0"]))
            await asyncio.sleep(0.5)

    follower = asyncio.create_task(follow_leaders())
    try:
        network.set_link(real_node(node), up=False)
        try:
            await eventually(
                lambda: node_not_ready(real_api, node), timeout=LONG_TIMEOUT, message=f"{node} NotReady"
            )
            await asyncio.sleep(CUT_SECONDS)  # the fault goes on (see CUT_SECONDS)
        finally:
            network.set_link(real_node(node), up=True)

        async def settled() -> Groups | None:
            groups = await workloads.groups_of(real_api, example_ns, example)
            whole = sorted(groups) == sorted(before) and all(
                workloads.whole_and_ready(g, example.size) for g in groups.values()
            )
            return groups if whole and await node_ready(real_api, node) else None

        after = await eventually(settled, timeout=FORMATION_TIMEOUT, interval=0.5, message="every group back")
        assert_serving_with_every_pod(after, example)

        async def unchanged() -> bool:
            groups = await workloads.groups_of(real_api, example_ns, example)
            return {g: workloads.uids(p) for g, p in groups.items()} == {
                g: workloads.uids(p) for g, p in after.items()
            }

        await consistently(unchanged, duration=10)
    finally:
        follower.cancel()
    entries = await ledger(real_api, example_ns, example.name)
    assert sorted(leaders) == sorted(before), f"groups: {sorted(leaders)}"
    twice = {g: incarnations for g, incarnations in leaders.items() if len(incarnations) > 2}
    assert twice == {}, workloads.brief(entries)
    recreations = [e["group"] for e in entries if e["action"] == "recreated"]
    assert all(recreations.count(g) <= 1 for g in before), workloads.brief(entries)


async def test_running_groups_keep_running_through_a_containerd_restart(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await workloads.apply_example(installed, example_ns, example)
    before = await available(real_api, example_ns, example)
    node = real_node(before["0"]["1"]["spec"]["nodeName"])
    running = fleet.running_tasks(installed.workdir, installed.node_bindir, node)
    url = await workloads.service_url(real_api, example_ns, example)
    with workloads.load_through(url) as load:
        await eventually(lambda: len([r for r in load.results() if r["ok"]]) >= 5, message="requests served")
        fleet.restart_containerd(
            node,
            installed.state.pids[f"{node.name}-containerd"],
            workdir=installed.workdir,
            bindir=installed.node_bindir,
            attach=installed.attach,
        )
        # The new containerd finds every container its shims kept running.
        await eventually(
            lambda: fleet.running_tasks(installed.workdir, installed.node_bindir, node) == running,
            message=f"{running} containers running on {node.name}",
        )
        served = len(load.results())
        await eventually(lambda: len(load.results()) >= served + 10, message="requests after the restart")

        async def untouched() -> bool:
            groups = await workloads.groups_of(real_api, example_ns, example)
            assert {g: workloads.uids(p) for g, p in groups.items()} == {
                g: workloads.uids(p) for g, p in before.items()
            }, workloads.describe(groups)
            assert all(workloads.restarts(p) == 0 for g in groups.values() for p in g.values())
            return all(workloads.whole_and_ready(g, example.size) for g in groups.values())

        await consistently(untouched, duration=15)
        results = load.stop()
    assert [r for r in results if not r["ok"]] == []
    assert await ledger(real_api, example_ns, example.name) == []
