"""The workloads LeaderWorkerSet exists for, on real kubelets: the Ray and JAX examples of docs/examples,
applied as a user applies them (`kubectl apply -k`). Their groups really form (a Ray cluster of
LWS_GROUP_SIZE nodes; a JAX process group that computes a tensor-parallel forward pass), their leaders
are Ready only once formed, and requests through the set's Service reach every rank. A runtime process
killed recreates its group once (or, with `restart-strategy: InPlace`, restarts it where it stands), and
the group forms and serves again. How long that takes is measured in benchmarks/workload_recovery.py."""

from __future__ import annotations

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from tests.e2e.realnodes.test_failures import ledger
from tests.support import workloads
from tests.support.wait import consistently
from tests.support.workloads import Example, Obj, available, last_start, names, ready_since

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]


async def test_groups_form_and_every_rank_answers_through_the_service(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await workloads.apply_example(installed, example_ns, example)
    groups = await available(real_api, example_ns, example)
    assert sorted(groups) == ["0", "1"]
    for index, group in groups.items():
        nodes = {p["spec"]["nodeName"] for p in group.values()}
        assert len(nodes) > 1, f"group {index} on one node: {nodes}"
        # The leader turned Ready only after every process of its group had started (it opens its port
        # once the group formed); and its answer names every pod of the group.
        assert ready_since(group["0"]) >= max(last_start(p) for p in group.values()), f"group {index}"
        answer = workloads.ask(group["0"]["status"]["podIP"], example)
        assert example.pods_that_took_part(answer) == names(group), answer

    url = await workloads.service_url(real_api, example_ns, example)
    answers = workloads.through_service(url, count=24)
    assert len(answers) == 24
    assert [a for a in answers if not a["ok"]] == []
    took_part = {tuple(example.pods_that_took_part(a["body"])) for a in answers}
    # kube-proxy spreads connections at random: 24 reach both groups but with odds of 2 in 2^24.
    assert took_part == {tuple(names(g)) for g in groups.values()}, took_part


async def recreated_once(
    cluster: LocalCluster, api: KubeClient, ns: str, example: Example, victim_index: str
) -> tuple[workloads.Recovery, Obj]:
    """Apply the example, kill the runtime of group 0's pod `victim_index`: the group comes back with
    new pods and serves, group 1 is untouched, and the ledger has one recreation; it and the entry."""
    await workloads.apply_example(cluster, ns, example)
    recovery = await workloads.crash_and_recover(api, ns, example, victim_index, in_place=False)
    before, after = recovery.before, recovery.after
    assert workloads.uids(after["1"]) == workloads.uids(before["1"]), "the other group was recreated"
    assert [workloads.restarts(p) for p in after["1"].values()] == [0] * example.size
    entries = await ledger(api, ns, example.name)
    assert [(e["group"], e["action"]) for e in entries] == [("0", "recreated")], workloads.brief(entries)
    assert entries[0]["pod"] in names(before["0"]), entries
    return recovery, entries[0]


async def test_a_killed_worker_runtime_recreates_its_group_once(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    recovery, failed = await recreated_once(installed, real_api, example_ns, example, "1")
    before = recovery.before
    victim = before["0"]["1"]["metadata"]["name"]
    # Ray: the worker's `ray start --block` exits 1 when its raylet dies. JAX: the killed process exits
    # 137 and its peers' collectives fail (exit 1); whichever the kubelets report first is the trigger.
    expected = {"ray": {victim: 1}, "jax": {n: 137 if n == victim else 1 for n in names(before["0"])}}
    assert failed["exitCode"] == expected[example.runtime][failed["pod"]], failed

    async def once() -> bool:  # the new group is left alone: one failure, one recreation
        groups = await workloads.groups_of(real_api, example_ns, example)
        same = workloads.uids(groups["0"]) == workloads.uids(recovery.after["0"])
        return same and len(await ledger(real_api, example_ns, example.name)) == 1

    await consistently(once, duration=5)


async def test_a_killed_leader_runtime_recreates_its_group_once(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await recreated_once(installed, real_api, example_ns, example, "0")


def in_place(lws: Obj) -> None:
    lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_RESTART_STRATEGY] = (
        ext.RESTART_STRATEGY_IN_PLACE
    )


async def test_in_place_restart_reforms_the_group_in_the_same_pods(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    """`restart-strategy: InPlace`: the worker's runtime killed, every container of its group restarts
    where it stands (same pods, nodes and IPs), the runtime forms again and serves; nothing recreated."""
    await workloads.apply_example(installed, example_ns, example, in_place)
    recovery = await workloads.crash_and_recover(real_api, example_ns, example, "1", in_place=True)
    before, after = recovery.before, recovery.after
    assert workloads.placement(after["1"]) == workloads.placement(before["1"]), "the other group moved"
    assert [workloads.restarts(p) for p in after["1"].values()] == [0] * example.size
    entries = await ledger(real_api, example_ns, example.name)
    assert [(e["group"], e["action"]) for e in entries] == [("0", "restarted-in-place")], workloads.brief(
        entries
    )
