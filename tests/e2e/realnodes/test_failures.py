"""Failures as real kubelets report them, not as a test writes pod status: a process that exits, a
container the kernel's OOM killer stops under its memory limit, an image nobody can pull, a workload
that crash-loops, a kubelet that stops. Each must reach the restart policy, the failure ledger and
`lws status` with its real cause."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONFIGMAPS, LEADERWORKERSETS
from tests.support.cli import lws_ok
from tests.support.objects import is_ready, labels, uid
from tests.support.realnodes import group_pods, lws_available, pod_http, probe_lws
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]


async def ledger(api: KubeClient, ns: str, name: str) -> list[dict[str, Any]]:
    found = await api.get_or_none(CONFIGMAPS, ns, f"{name}-failure-ledger")
    return list(json.loads(((found or {}).get("data") or {}).get("entries") or "[]"))


async def group_zero(api: KubeClient, ns: str, name: str) -> dict[str, dict[str, Any]]:
    """Group 0's pods by worker index."""
    return {labels(p)[c.LABEL_WORKER_INDEX]: p for p in (await group_pods(api, ns, name)).get("0", [])}


async def ready_group(api: KubeClient, ns: str, name: str, size: int) -> dict[str, dict[str, Any]]:
    async def ready() -> dict[str, dict[str, Any]] | None:
        pods = await group_zero(api, ns, name)
        return pods if len(pods) == size and all(is_ready(p) for p in pods.values()) else None

    group = await eventually(ready, timeout=LONG_TIMEOUT)
    assert group is not None
    return group


async def test_a_worker_process_that_exits_recreates_its_group_once(
    real_api: KubeClient, real_ns: str
) -> None:
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "crash", replicas=1, size=2))
    before = await ready_group(real_api, real_ns, "crash", 2)

    pod_http(before["1"]["status"]["podIP"], "/exit", method="POST")

    async def recreated() -> dict[str, dict[str, Any]] | None:
        group = await ready_group(real_api, real_ns, "crash", 2)
        return group if uid(group["0"]) != uid(before["0"]) else None

    after = await eventually(recreated, timeout=LONG_TIMEOUT)
    assert after is not None
    assert uid(after["1"]) != uid(before["1"])
    entries = await ledger(real_api, real_ns, "crash")
    assert [(e["action"], e["pod"], e["exitCode"]) for e in entries] == [("recreated", "crash-0-1", 3)]

    async def once() -> bool:  # the new group is left alone: one failure, one recreation
        group = await group_zero(real_api, real_ns, "crash")
        return uid(group["0"]) == uid(after["0"]) and len(await ledger(real_api, real_ns, "crash")) == 1

    await consistently(once, duration=3)


async def test_an_oom_kill_and_an_image_pull_failure_show_their_real_causes(
    installed: LocalCluster, real_api: KubeClient, real_ns: str
) -> None:
    await real_api.create(
        LEADERWORKERSETS, probe_lws(real_ns, "hungry", replicas=1, size=2, memory_limit="48Mi")
    )
    await real_api.create(
        LEADERWORKERSETS, probe_lws(real_ns, "unpullable", replicas=1, size=2, image="lws.local/missing:v0")
    )
    group = await ready_group(real_api, real_ns, "hungry", 2)
    pod_http(group["1"]["status"]["podIP"], "/oom", method="POST")

    async def oom_recorded() -> list[dict[str, Any]]:
        return await ledger(real_api, real_ns, "hungry")

    entries = await eventually(oom_recorded, timeout=LONG_TIMEOUT)
    assert [(e["cause"], e["exitCode"], e["detail"], e["pod"]) for e in entries] == [
        ("oom-killed", 137, "OOMKilled", "hungry-0-1")
    ]
    failures = await lws_ok(installed, "status", "hungry", "-n", real_ns, "--failures")
    assert "oom-killed" in failures, failures
    assert "OOMKilled" in failures, failures

    async def pull_failure_shown() -> dict[str, Any] | None:
        status = json.loads(await lws_ok(installed, "status", "unpullable", "-n", real_ns, "-o", "json"))
        groups = status["groups"]
        return groups[0] if groups and groups[0].get("cause") == "ImagePull" else None

    shown = await eventually(pull_failure_shown, timeout=LONG_TIMEOUT)
    assert shown is not None
    assert "lws.local/missing:v0" in shown["reason"], shown
    assert not await lws_available(real_api, real_ns, "unpullable")


async def test_max_group_restarts_stops_a_crash_looping_group(real_api: KubeClient, real_ns: str) -> None:
    lws = probe_lws(real_ns, "loop", replicas=1, size=2, worker_env={"PROBE_EXIT_AFTER": "3s"})
    lws["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = 1
    await real_api.create(LEADERWORKERSETS, lws)

    async def exhausted() -> list[str]:
        actions = [e["action"] for e in await ledger(real_api, real_ns, "loop")]
        return actions if "budget-exhausted" in actions else []

    actions = await eventually(exhausted, timeout=LONG_TIMEOUT)
    assert actions == ["recreated", "budget-exhausted"], actions
    leader = (await group_zero(real_api, real_ns, "loop"))["0"]

    async def left_in_place() -> bool:  # the kubelet restarts the worker; the group is not recreated
        group = await group_zero(real_api, real_ns, "loop")
        return uid(group["0"]) == uid(leader) and len(await ledger(real_api, real_ns, "loop")) == 2

    await consistently(left_in_place, duration=5)


async def test_a_kubelet_that_stops_shows_in_status_and_recreates_nothing(
    installed: LocalCluster, real_api: KubeClient, real_ns: str
) -> None:
    """A frozen kubelet (SIGSTOP: alive, silent) stops posting node status; after the node monitor's
    grace period the node lifecycle controller marks its pods not ready. `lws status` names the node;
    no container failed, so nothing is recreated and the ledger stays empty; once the kubelet
    resumes, the same pods are Ready again."""
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "frozen", replicas=1, size=2))
    before = await ready_group(real_api, real_ns, "frozen", 2)
    node = before["1"]["spec"]["nodeName"]
    kubelet = installed.state.pids[f"{node}-kubelet"]
    os.kill(kubelet, signal.SIGSTOP)
    try:

        async def node_named() -> dict[str, Any] | None:
            status = json.loads(await lws_ok(installed, "status", "frozen", "-n", real_ns, "-o", "json"))
            groups = status["groups"]
            return groups[0] if groups and groups[0].get("cause") == "NodeNotReady" else None

        shown = await eventually(node_named, timeout=LONG_TIMEOUT * 2)
        assert shown is not None
        assert f"node {node} stopped reporting" in shown["reason"], shown
    finally:
        os.kill(kubelet, signal.SIGCONT)
    after = await ready_group(real_api, real_ns, "frozen", 2)
    assert {index: uid(pod) for index, pod in after.items()} == {i: uid(p) for i, p in before.items()}
    assert await ledger(real_api, real_ns, "frozen") == []
