"""A crash-looping group on the full cluster (real StatefulSet, garbage collector, scheduler, kwok
nodes; `lws manager` and `lws status` as separate processes): with a restart back-off the gaps
between its recreations grow, maxGroupRestarts still stops it, and the failure ledger,
`lws status --failures` and the manager's /metrics all name the cause.

kwok runs no containers: a crash is the kubelet status a real node would report
(devcluster/chaos.restart_container: restartCount + 1, last state terminated with exit code 137).
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle.ledger import ledger_name
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONFIGMAPS, LEADERWORKERSETS, PODS
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.cli import lws_ok
from tests.support.expect import expect_deployed
from tests.support.lwsapi import create
from tests.support.manager import ManagerProcess
from tests.support.objects import uid
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
LEADER = f"{NAME}-0"
WORKER = f"{NAME}-0-1"
# Long enough that a recreated group is back (and crashes again) well inside its delay even on a
# loaded machine (a recreation there takes up to ~15 s), so every wait is observed: the second
# delay would be 60 s, the cap makes it 45 s.
BASE, CAP, LIMIT = 30.0, 45.0, 3


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def _entries(api: KubeClient, ns: str) -> list[Obj]:
    configmap = await api.get_or_none(CONFIGMAPS, ns, ledger_name(NAME))
    return [] if configmap is None else list(json.loads(configmap["data"].get("entries") or "[]"))


async def _crash_new_worker(api: KubeClient, rest: RestClient, ns: str, seen: set[str]) -> None:
    """Crash the worker of the current incarnation as soon as its container has started."""

    async def started() -> str:
        pod = await api.get_or_none(PODS, ns, WORKER)
        assert pod is not None, "no worker yet"
        assert uid(pod) not in seen, "still the previous incarnation's worker"
        assert pod["metadata"].get("deletionTimestamp") is None, "terminating"
        assert (pod.get("status") or {}).get("containerStatuses"), "containers not started"
        return uid(pod)

    seen.add(await eventually(started, timeout=LONG_TIMEOUT))
    await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)


async def _leader_replaced(api: KubeClient, ns: str, old: str) -> str:
    async def replaced() -> str:
        pod = await api.get_or_none(PODS, ns, LEADER)
        assert pod is not None, "no leader yet"
        assert uid(pod) != old, "leader not recreated yet"
        return uid(pod)

    return await eventually(replaced, timeout=LONG_TIMEOUT)


async def _cli(cluster: LocalCluster, ns: str, *flags: str) -> str:
    return await lws_ok(cluster, "status", NAME, "-n", ns, *flags)


async def test_a_crash_looping_group_backs_off_longer_each_time_and_its_budget_still_stops_it(
    api: KubeClient, ns: str, full_cluster: LocalCluster, lws_manager: ManagerProcess
) -> None:
    backoff = f"base={BASE:g}s,cap={CAP:g}s,reset=10m"
    builder = LeaderWorkerSetBuilder(ns).replicas(1).size(2).max_group_restarts(LIMIT)
    await create(api, builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, backoff).obj())
    await expect_deployed(api, ns, 1, 2)
    assert await _entries(api, ns) == []
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    leader_uid, seen = uid(await api.get(PODS, ns, LEADER)), set[str]()

    for recreation in range(1, LIMIT + 1):
        await _crash_new_worker(api, rest, ns, seen)
        if recreation == 2:
            # Waiting out the first delay: the tree says when the group comes back.
            async def waiting() -> str:
                text = await _cli(full_cluster, ns)
                assert "backing off, next recreation in" in text, (text, await _entries(api, ns))
                return text

            await eventually(waiting)
        leader_uid = await _leader_replaced(api, ns, leader_uid)

    # One failure too many: the budget stops the group at once, without waiting out a delay.
    await _crash_new_worker(api, rest, ns, seen)

    async def exhausted() -> list[Obj]:
        entries = await _entries(api, ns)
        assert entries, "no ledger yet"
        assert entries[-1]["action"] == "budget-exhausted", [e["action"] for e in entries]
        return entries

    entries = await eventually(exhausted, timeout=LONG_TIMEOUT)
    actions = [e["action"] for e in entries]
    assert actions == [
        "recreated", "backing-off", "recreated", "backing-off", "recreated", "budget-exhausted"
    ], actions  # fmt: skip
    assert {(e["cause"], e["exitCode"], e["pod"], e["container"]) for e in entries} == {
        ("exit-code", 137, WORKER, "worker")
    }
    recreated = [e for e in entries if e["action"] == "recreated"]
    assert [e.get("delaySeconds") for e in recreated] == [None, BASE, CAP]
    gaps = [_seconds(b["time"]) - _seconds(a["time"]) for a, b in itertools.pairwise(recreated)]
    # The back-off clock starts when the controller decides a recreation; the ledger stamps the
    # entry when it writes it, a few hundred milliseconds later under load: hence one second of slack.
    assert gaps[0] >= BASE - 1, gaps
    assert gaps[1] >= CAP - 1, gaps
    assert gaps[1] > gaps[0], gaps  # the delays grew: the 30 s base, then the 45 s cap
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    counts = json.loads(lws["metadata"]["annotations"][c.ANNOTATION_GROUP_RESTART_COUNTS])
    assert list(counts.values()) == [LIMIT], counts  # only recreations that happened were charged
    leader = await api.get(PODS, ns, LEADER)
    assert leader["metadata"]["annotations"][c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED] == "true"

    # lws status --failures: the table (plain, as piped) and the JSON document.
    table = await _cli(full_cluster, ns, "--failures")
    assert f"Failure ledger of LeaderWorkerSet {ns}/{NAME}: 6 entries" in table
    assert table.count("exit-code") == 6
    assert "budget-exhausted" in table
    assert f"backing off {CAP:g}s" in table
    doc = json.loads(await _cli(full_cluster, ns, "--failures", "-o", "json"))
    assert [e["action"] for e in doc["failures"]] == actions
    assert doc["backoff"]["0"]["streak"] == LIMIT

    # /metrics: the recreations by cause, and the Degraded condition the restart-budget alert reads
    # (charts/lws/templates/prometheus/rules.yaml).
    exposition = await asyncio.to_thread(lws_manager.scrape)
    sample = f'lws_group_recreations_total{{cause="exit-code",lws="{NAME}",namespace="{ns}"}} {float(LIMIT)}'
    assert sample in exposition

    async def degraded() -> str:
        text = await asyncio.to_thread(lws_manager.scrape)
        want = f'lws_status_condition{{condition="Degraded",lws="{NAME}",namespace="{ns}"}} 1.0'
        assert want in text, [line for line in text.splitlines() if line.startswith("lws_status_condition")]
        return text

    await eventually(degraded)
