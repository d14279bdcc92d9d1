"""`lws status` against the full cluster (manager and CLI as separate processes): a group whose
worker asks for more GPUs than any node has is explained by the scheduler's own message, in the
JSON document, in the plain tree `--watch` prints to a pipe and, as the set opts in to not-ready
events, in a GroupNotReady event on the LeaderWorkerSet.

Not covered here: image pull and crash-loop states. kwok neither pulls images nor runs
containers, so it never produces them; the unit tables cover those causes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.observe import diagnosis
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, NODES
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import lws_argv, lws_ok
from tests.support.lwsapi import create
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
NAME = "gpu-hungry"


def status_argv(cluster: LocalCluster, ns: str, *flags: str) -> list[str]:
    return lws_argv(cluster, "status", NAME, "-n", ns, *flags)


async def status_json(cluster: LocalCluster, ns: str) -> Obj:
    doc: Obj = json.loads(await lws_ok(cluster, "status", NAME, "-n", ns, "-o", "json"))
    return doc


async def test_unschedulable_worker_is_explained_by_the_schedulers_message(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    most = max(int(node["status"]["allocatable"].get(GPU, "0")) for node in await api.list(NODES))
    too_many = str(most + 1)
    builder = LeaderWorkerSetBuilder(ns, NAME).replicas(1).size(2)
    builder.annotations({ext.ANNOTATION_NOT_READY_EVENTS: ext.NOT_READY_EVENTS_TRUE})
    await create(api, builder.worker_resources({GPU: too_many}).obj())

    async def explained() -> Obj | None:
        doc = await status_json(full_cluster, ns)
        groups = doc["groups"]
        if len(groups) != 1 or groups[0]["cause"] != diagnosis.CAUSE_FAILED_SCHEDULING:
            return None
        return groups[0]

    group = await eventually(explained, timeout=LONG_TIMEOUT, message="no FailedScheduling reason")
    assert group["ready"] is False
    assert group["reason"].startswith(f"worker {NAME}-0-1 unschedulable: ")
    assert f"Insufficient {GPU}" in group["reason"]
    pods = {pod["name"]: pod for pod in group["pods"]}
    assert pods[f"{NAME}-0"]["node"] is not None  # the leader asks for no GPU and is placed
    assert pods[f"{NAME}-0-1"]["node"] is None

    # --watch into a pipe prints the plain tree (not blank live frames) with the same reason.
    proc = await asyncio.create_subprocess_exec(
        *status_argv(full_cluster, ns, "--watch"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not any("not ready — " in line for line in lines):
            raw = await asyncio.wait_for(proc.stdout.readline(), timeout=LONG_TIMEOUT)
            assert raw, f"lws status --watch ended early: {(await proc.communicate())[1].decode()}"
            lines.append(raw.decode())
        assert lines[0].startswith(f"LeaderWorkerSet {ns}/{NAME}  replicas 0/1 ready")
        assert all(line.strip() for line in lines), lines
        assert not any("\x1b" in line for line in lines), lines
        reason_line = next(line for line in lines if "not ready — " in line)
        assert reason_line.rstrip("\n").endswith(group["reason"])  # never cut off a terminal
    finally:
        proc.terminate()
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()

    # The controller said the same in an event, from the pod's Unschedulable condition.
    async def said() -> str:
        events = [e for e in await api.list(EVENTS, ns) if e.get("reason") == ext.EVENT_GROUP_NOT_READY]
        assert events, "no GroupNotReady event yet"
        return str(events[0].get("note"))

    note = await eventually(said, timeout=LONG_TIMEOUT)
    assert note.startswith(f"group 0 not ready: worker {NAME}-0-1 unschedulable: "), note
    assert f"Insufficient {GPU}" in note, note
