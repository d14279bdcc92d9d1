"""Node quarantine on the full cluster (kube-scheduler deciding, StatefulSet controller, garbage
collector, kwok nodes; `lws manager` with its webhooks and `lws status` as separate processes).

The set's templates prefer one node (the scheduler keeps sending a recreated group back to the node
that fails it, as in lws#877). Group 0's worker crashes there twice within the window: the node is
quarantined, the recreated group 0 is placed elsewhere by the scheduler (its pods carry the term the
pod webhook added), group 1 — on the same node — is not touched, `lws status`, /metrics and an event
say so; after the cool-down the node is released and a recreated group may use it again.

kwok runs no containers: a crash is the status a kubelet reports (devcluster/chaos.restart_container).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.desired.affinity import NODE_NAME_FIELD
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS
from tests.support import expect
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.cli import lws_ok
from tests.support.lwsapi import create
from tests.support.manager import ManagerProcess
from tests.support.objects import uid
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
LEADER, WORKER = f"{NAME}-0", f"{NAME}-0-1"
# Two failures within the window quarantine the node, for as long again. Long enough for a crash,
# a recreation and a second crash on a loaded machine, and for the recreated group to be placed
# while the quarantine holds.
WINDOW_SECONDS = 90


def _group(pods: list[Obj], group: str) -> list[Obj]:
    return [p for p in pods if p["metadata"]["labels"].get(c.LABEL_GROUP_INDEX) == group]


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _avoided(pod: Obj) -> list[str]:
    """The node names the pod's required node affinity excludes."""
    affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    ) or []
    return [
        value
        for term in terms
        for field in term.get("matchFields") or []
        if field["key"] == NODE_NAME_FIELD and field["operator"] == "NotIn"
        for value in field["values"]
    ]


async def _pods(api: KubeClient, ns: str) -> list[Obj]:
    return await api.list(PODS, ns, f"{c.LABEL_SET_NAME}={NAME}")


async def _quarantined(api: KubeClient, ns: str) -> list[Obj]:
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    return list(
        json.loads((lws["metadata"].get("annotations") or {}).get(ext.ANNOTATION_QUARANTINED_NODES) or "[]")
    )


async def _group_placed(api: KubeClient, ns: str, old_leader: str) -> list[Obj]:
    """Group 0's new incarnation, every pod bound to a node."""

    async def placed() -> list[Obj]:
        pods = _group(await _pods(api, ns), "0")
        leader = next((p for p in pods if p["metadata"]["name"] == LEADER), None)
        assert leader is not None, "no leader yet"
        assert uid(leader) != old_leader, "leader not recreated yet"
        placement = [(p["metadata"]["name"], _node(p)) for p in pods]
        assert len(pods) == 2, placement
        assert all(node for _, node in placement), placement
        assert all(p["metadata"].get("deletionTimestamp") is None for p in pods), "terminating"
        return pods

    return await eventually(placed, timeout=LONG_TIMEOUT)


async def _crash_worker(api: KubeClient, rest: RestClient, ns: str) -> None:
    async def started() -> bool:
        pod = await api.get(PODS, ns, WORKER)
        assert (pod.get("status") or {}).get("containerStatuses"), "containers not started"
        return True

    await eventually(started, timeout=LONG_TIMEOUT)
    await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)


async def _gauge(manager: ManagerProcess, ns: str, want: float) -> None:
    async def check() -> bool:
        text = await asyncio.to_thread(manager.scrape)
        sample = f'lws_quarantined_nodes{{lws="{NAME}",namespace="{ns}"}} {want}'
        assert sample in text, [line for line in text.splitlines() if line.startswith("lws_quarantined")]
        return True

    await eventually(check)


async def test_a_node_that_keeps_failing_a_group_is_quarantined_avoided_and_released(
    api: KubeClient, ns: str, full_cluster: LocalCluster, lws_manager: ManagerProcess
) -> None:
    nodes = sorted(
        n["metadata"]["name"] for n in await api.list(NODES, None) if not n["spec"].get("unschedulable")
    )
    bad = nodes[0]
    builder = LeaderWorkerSetBuilder(ns).replicas(2).size(2).prefer_node(bad)
    await create(api, builder.annotation(ext.ANNOTATION_QUARANTINE_AFTER, f"2/{WINDOW_SECONDS}s").obj())
    await expect.expect_deployed(api, ns, 2, 2)
    pods = await _pods(api, ns)
    assert {_node(p) for p in pods} == {bad}, [(p["metadata"]["name"], _node(p)) for p in pods]
    group_1 = {uid(p) for p in _group(pods, "1")}
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)

    # The first crash on the bad node: recreated, and placed on it again.
    leader = uid(await api.get(PODS, ns, LEADER))
    await _crash_worker(api, rest, ns)
    again = await _group_placed(api, ns, leader)
    assert {_node(p) for p in again} == {bad}
    assert await _quarantined(api, ns) == []
    assert not any(_avoided(p) for p in again)

    # The second: the node is quarantined, and the recreated group lands elsewhere.
    await _crash_worker(api, rest, ns)
    moved = await _group_placed(api, ns, uid(next(p for p in again if p["metadata"]["name"] == LEADER)))
    (held,) = await _quarantined(api, ns)
    assert held["node"] == bad
    assert [(f["group"], f["pod"], f["cause"]) for f in held["failures"]] == [("0", WORKER, "exit-code")] * 2
    assert all(_node(p) != bad for p in moved), [(p["metadata"]["name"], _node(p)) for p in moved]
    assert all(_avoided(p) == [bad] for p in moved)
    # Group 1, on the same node, was not touched.
    assert {uid(p) for p in _group(await _pods(api, ns), "1")} == group_1

    (event,) = await expect.events_with(api, ns, ext.EVENT_NODE_QUARANTINED)
    assert event["note"].startswith(f"Node {bad} quarantined until {held['until']}: 2 failures within 90s")
    await _gauge(lws_manager, ns, 1.0)
    tree = await lws_ok(full_cluster, "status", NAME, "-n", ns)
    assert "quarantined nodes: 1 (new pods of this set avoid them)" in tree
    assert f"{bad} until {held['until']}" in tree
    doc = json.loads(await lws_ok(full_cluster, "status", NAME, "-n", ns, "-o", "json"))
    assert [n["node"] for n in doc["quarantinedNodes"]] == [bad]
    print(f"\n$ lws status {NAME}\n{tree}")  # the docs' captured output (pytest -s)

    # The cool-down ends: released, announced, counted; a recreated group may use the node again.
    async def released() -> bool:
        assert await _quarantined(api, ns) == []
        return True

    await eventually(released, timeout=WINDOW_SECONDS + LONG_TIMEOUT)
    await expect.expect_event(
        api,
        ns,
        ext.EVENT_NODE_RELEASED,
        f"Node {bad} released: its quarantine since {held['since']} ended at {held['until']}",
    )
    await _gauge(lws_manager, ns, 0.0)
    await _crash_worker(api, rest, ns)  # on another node: one failure there, below the threshold
    back = await _group_placed(api, ns, uid(next(p for p in moved if p["metadata"]["name"] == LEADER)))
    assert {_node(p) for p in back} == {bad}
    assert not any(_avoided(p) for p in back)
    assert await _quarantined(api, ns) == []
    assert {uid(p) for p in _group(await _pods(api, ns), "1")} == group_1


async def _our_taint(api: KubeClient, node: str) -> bool:
    taints = (await api.get(NODES, None, node)).get("spec", {}).get("taints") or []
    return any(t.get("key") == ext.TAINT_QUARANTINED and t.get("effect") == "NoSchedule" for t in taints)


async def test_taint_mode_taints_the_quarantined_node_until_the_cool_down_ends(
    api: KubeClient, ns: str, full_cluster: LocalCluster, lws_manager: ManagerProcess
) -> None:
    """`quarantine-mode: Taint` (the e2e manager runs with admin credentials, as an install with
    quarantineTaints.enabled): the node the set quarantines gets our NoSchedule taint, the state
    records it, and the cool-down's end removes it (tests/integration/controllers/
    test_quarantine_taint.py has the refusal under the default role)."""
    nodes = sorted(
        n["metadata"]["name"] for n in await api.list(NODES, None) if not n["spec"].get("unschedulable")
    )
    bad = nodes[-1]
    annotations = {
        ext.ANNOTATION_QUARANTINE_AFTER: f"2/{WINDOW_SECONDS}s",
        ext.ANNOTATION_QUARANTINE_MODE: ext.QUARANTINE_MODE_TAINT,
    }
    await create(
        api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).prefer_node(bad).annotations(annotations).obj()
    )
    await expect.expect_deployed(api, ns, 1, 2)
    assert {_node(p) for p in await _pods(api, ns)} == {bad}
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    leader = uid(await api.get(PODS, ns, LEADER))
    await _crash_worker(api, rest, ns)
    again = await _group_placed(api, ns, leader)
    assert not await _our_taint(api, bad)
    await _crash_worker(api, rest, ns)
    moved = await _group_placed(api, ns, uid(next(p for p in again if p["metadata"]["name"] == LEADER)))
    assert all(_node(p) != bad for p in moved)

    async def tainted() -> bool:
        assert await _our_taint(api, bad), "no taint"
        (held,) = await _quarantined(api, ns)
        assert held.get("taint") == "tainted", held
        return True

    await eventually(tainted)
    note = f"Node {bad} tainted {ext.TAINT_QUARANTINED}:NoSchedule while it is quarantined"
    await expect.expect_event(api, ns, ext.EVENT_NODE_TAINTED, note)

    async def untainted() -> bool:
        assert await _quarantined(api, ns) == []
        assert not await _our_taint(api, bad), "the taint outlived the quarantine"
        return True

    await eventually(untainted, timeout=WINDOW_SECONDS + LONG_TIMEOUT)
    await expect.expect_event(
        api, ns, ext.EVENT_NODE_UNTAINTED, f"Node {bad} untainted: its quarantine ended"
    )
