"""Rollout control on the full cluster, manager and `lws rollout` as separate processes:

* pause mid-rollout (2 of 4 groups updated): the partition holds, no group is recreated, `lws status`
  says so; resume and the rollout completes; the step metrics were observed;
* a rollout whose new groups can never be scheduled hits its progress deadline: our condition and a
  Warning event carry the scheduler's reason, the partition holds; `lws rollout undo` puts the old
  template back and the rollout completes onto the original revision (same hash), leaving the group
  that never left it untouched.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.observe import diagnosis
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, NODES, STATEFULSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import lws_ok
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create, leader_statefulset_revision_key, pods_by_name
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NAME = "rolled"
GPU = "nvidia.com/gpu"
HOLD = 5.0  # seconds a held rollout is watched not moving


async def rollout(cluster: LocalCluster, ns: str, *args: str) -> str:
    return await lws_ok(cluster, "rollout", *args, NAME, "-n", ns)


async def leader_sts(api: KubeClient, ns: str) -> tuple[int, int, str]:
    sts = await api.get(STATEFULSETS, ns, NAME)
    key = sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    return int(sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]), int(sts["spec"]["replicas"]), key


async def condition(api: KubeClient, ns: str, condition_type: str, status: str = c.CONDITION_TRUE) -> Obj:
    async def check() -> Obj:
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        found = [cond for cond in lws["status"].get("conditions") or [] if cond["type"] == condition_type]
        assert found, f"no {condition_type} yet"
        assert found[0]["status"] == status, found[0]
        return found[0]

    result: Obj = await eventually(check, timeout=LONG_TIMEOUT)
    return result


async def holds(api: KubeClient, ns: str, want: tuple[int, int, str], pods: dict[str, str]) -> None:
    """The leader StatefulSet keeps (partition, replicas, revision) and no pod is recreated."""

    async def check() -> bool:
        assert await leader_sts(api, ns) == want
        now = {name: pod["metadata"]["uid"] for name, pod in (await pods_by_name(api, ns, NAME)).items()}
        assert now == pods, "a pod was recreated while the rollout was held"
        return True

    await consistently(check, duration=HOLD, interval=0.5)


async def expect_events(api: KubeClient, ns: str, reason: str, want: list[tuple[str, str]]) -> None:
    """Exactly these (type, note) events of `reason`; the recorder sends them in the background."""

    async def check() -> bool:
        events = [(e["type"], e["note"]) for e in await api.list(EVENTS, ns) if e.get("reason") == reason]
        assert events == want
        return True

    await eventually(check, timeout=LONG_TIMEOUT)


def metric(manager: ManagerProcess, name: str, ns: str) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{manager.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and f'namespace="{ns}"' in line and f'lws="{NAME}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_pause_mid_rollout_holds_the_partition_and_resume_completes_it(
    api: KubeClient, ns: str, full_cluster: LocalCluster, lws_manager: ManagerProcess
) -> None:
    await create(api, LeaderWorkerSetBuilder(ns, NAME).replicas(4).size(2).obj())
    await expect_groups_available(api, ns, 4, name=NAME)
    # Mid-rollout: the user's partition stops it with groups 2 and 3 updated.
    await api.merge_patch(
        LEADERWORKERSETS,
        ns,
        NAME,
        {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 2}}}},
    )
    image = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"
    await api.json_patch(LEADERWORKERSETS, ns, NAME, [{"op": "replace", "path": image, "value": "nginx:2"}])

    async def two_updated() -> bool:
        status = (await api.get(LEADERWORKERSETS, ns, NAME))["status"]
        return bool(status.get("updatedReplicas") == 2 and status.get("readyReplicas") == 4)

    await eventually(two_updated, timeout=LONG_TIMEOUT)
    assert "rollout paused" in await rollout(full_cluster, ns, "pause")
    await condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED)  # the controller processed the pause
    out = await lws_ok(full_cluster, "status", NAME, "-n", ns, "-o", "json")
    assert json.loads(out)["rollout"] == [
        "rollout paused: the partition and surge hold until `lws rollout resume`"
    ]

    # Lifting the user's partition would roll groups 1 and 0; paused, nothing moves.
    held = await leader_sts(api, ns)
    assert held[:2] == (2, 4)
    pods = {name: pod["metadata"]["uid"] for name, pod in (await pods_by_name(api, ns, NAME)).items()}
    lws = await api.merge_patch(
        LEADERWORKERSETS,
        ns,
        NAME,
        {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 0}}}},
    )

    async def generation_observed() -> bool:
        observed = (await api.get(LEADERWORKERSETS, ns, NAME))["status"].get("observedGeneration")
        return bool(observed == lws["metadata"]["generation"])

    await eventually(generation_observed, timeout=LONG_TIMEOUT)  # processed, and still held:
    await holds(api, ns, held, pods)

    assert "rollout resumed" in await rollout(full_cluster, ns, "resume")
    await condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED, c.CONDITION_FALSE)
    await expect_groups_available(api, ns, 4, name=NAME)
    assert (await leader_sts(api, ns))[:2] == (0, 4)
    await expect_events(
        api, ns, ext.EVENT_ROLLOUT_RESUMED, [("Normal", f"Rollout of {NAME} resumed at partition 2")]
    )

    async def steps_observed() -> bool:
        count = metric(lws_manager, "lws_rollout_step_duration_seconds_count", ns)
        return count is not None and count >= 2  # the first half before the pause, the rest after

    await eventually(steps_observed, timeout=LONG_TIMEOUT)
    ratio = metric(lws_manager, "lws_rollout_min_ready_ratio", ns)
    assert ratio is not None
    assert 0.0 <= ratio <= 0.75  # maxUnavailable 1 of 4: at least one group was down at a time


async def test_a_rollout_that_cannot_progress_hits_its_deadline_and_undo_rolls_back(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    builder = LeaderWorkerSetBuilder(ns, NAME).replicas(2).size(2)
    await create(api, builder.annotation(ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE, "5").obj())
    await expect_groups_available(api, ns, 2, name=NAME)
    original = await leader_statefulset_revision_key(api, ns, NAME)
    untouched = (await pods_by_name(api, ns, NAME))[f"{NAME}-0"]["metadata"]["uid"]

    most = max(int(node["status"]["allocatable"].get(GPU, "0")) for node in await api.list(NODES))
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    starved = (
        LeaderWorkerSetBuilder(ns, NAME).replicas(2).size(2).worker_resources({GPU: str(most + 1)}).obj()
    )
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"] = starved["spec"]["leaderWorkerTemplate"][
        "workerTemplate"
    ]
    await api.update(LEADERWORKERSETS, lws)

    halted = await condition(api, ns, ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED)
    assert halted["reason"] == diagnosis.CAUSE_FAILED_SCHEDULING
    assert re.match(
        rf"no progress for 5s, rollout halted with 1 group\(s\) not ready; group 1: worker {NAME}-1-1 "
        rf"unschedulable: 0/\d+ nodes are available: \d+ Insufficient {GPU}",
        halted["message"],
    )
    await expect_events(
        api,
        ns,
        ext.EVENT_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
        [("Warning", f"FailedScheduling: {halted['message']}")],
    )
    held = await leader_sts(api, ns)
    assert held[0] == 1  # group 1 was released, group 0 waits
    pods = {name: pod["metadata"]["uid"] for name, pod in (await pods_by_name(api, ns, NAME)).items()}
    await holds(api, ns, held, pods)

    history = await rollout(full_cluster, ns, "history")
    assert original in history
    assert held[2] in history

    undone = await rollout(full_cluster, ns, "undo")
    assert undone.startswith(
        f"LeaderWorkerSet {ns}/{NAME}: rolled back to revision 1 ({original}) from {held[2]}"
    )
    assert re.search(rf"^-\s+{GPU}: '{most + 1}'$", undone, re.M), undone  # the diff names what changed

    await expect_groups_available(api, ns, 2, name=NAME)
    assert await leader_statefulset_revision_key(api, ns, NAME) == original
    assert (await leader_sts(api, ns))[2] == original
    assert (await pods_by_name(api, ns, NAME))[f"{NAME}-0"]["metadata"]["uid"] == untouched
    await condition(api, ns, ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, c.CONDITION_FALSE)
