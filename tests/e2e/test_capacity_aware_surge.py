"""Capacity-aware surge on the full cluster, kube-scheduler deciding, the manager
and `lws` as separate processes. The issue's scenario scaled down: 3 kwok nodes of 8 GPUs (the
test's own, tainted and labelled, so no other test's pod lands there) filled by 3 one-pod groups of
8 GPUs, maxSurge 1, maxUnavailable 0, partition 1, and a new image:

1. without the annotation, as upstream: the surge group stays Pending, the leader StatefulSet sits
   at 4 replicas and partition 3, and no old group is replaced (`lws plan` warned it would be so);
2. with `surge-fallback-seconds: "5"` the surge is given back and groups 2 and 1 are replaced
   without surge, never more than one of them down at a time; a SurgeFallback event and condition
   say so;
   the manager is killed and restarted: it carries on without surge (the state is on the LWS);
3. a fourth node joins: the controller surges again (SurgeResumed event, condition False), the
   surge group is placed on the new node;
4. the user's partition is lowered to 0 and the rollout completes with surge.

The partition of 1 keeps group 0 on the old template through steps 2 and 3: without it the
rollout without surge of three quick kwok groups could end before the fourth node is noticed.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, NODES, PODS, STATEFULSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import lws_ok, run_lws
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import NEW_IMAGE, create, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.objects import group_of, is_leader, labels
from tests.support.wait import LONG_TIMEOUT, consistently, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NAME = "surging"
GPU = "nvidia.com/gpu"
REPLICAS = 3
POOL = "lws-e2e/surge-pool"
HOLD = 6.0  # seconds the stalled surge is watched not moving (longer than the fallback period)


def pool_node(ns: str, index: int) -> Obj:
    """A kwok node of 8 GPUs in this test's pool, tainted so only this test's pods go there."""
    manifest = NodeSpec(name=f"surge-{ns[-6:]}-{index}", index=200 + index, gpus=8, tpus=0).manifest()
    manifest["metadata"]["labels"][POOL] = ns
    manifest["spec"]["taints"] = [{"key": POOL, "value": ns, "effect": "NoSchedule"}]
    return manifest


def gpu_lws(ns: str, image: str | None = None) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns, NAME)
        .replicas(REPLICAS)
        .size(1)
        .no_leader_template()
        .worker_resources({GPU: "8"})
        .max_surge(1)
        .max_unavailable(0)
        .partition(1)
    )
    if image is not None:
        builder.worker_image(image)
    lws = builder.obj()
    spec = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["nodeSelector"] = {POOL: ns}
    spec["tolerations"] = [{"key": POOL, "operator": "Equal", "value": ns, "effect": "NoSchedule"}]
    return lws


async def leader_sts(api: KubeClient, ns: str) -> tuple[int, int]:
    sts = await api.get(STATEFULSETS, ns, NAME)
    return int(sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]), int(sts["spec"]["replicas"])


async def leaders(api: KubeClient, ns: str) -> dict[int, Obj]:
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    return {group_of(p): p for p in pods if is_leader(p) and not p["metadata"].get("deletionTimestamp")}


def unschedulable(pod: Obj) -> bool:
    return any(
        cond["type"] == "PodScheduled" and cond["status"] == "False" and cond.get("reason") == "Unschedulable"
        for cond in (pod.get("status") or {}).get("conditions") or []
    )


def ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(cond["type"] == "Ready" and cond["status"] == "True" for cond in conditions)


async def surge_condition(api: KubeClient, ns: str, status: str) -> Obj:
    async def check() -> Obj:
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        found = [
            cond
            for cond in lws["status"].get("conditions") or []
            if cond["type"] == ext.CONDITION_SURGE_FALLBACK
        ]
        assert found, "no SurgeFallback condition yet"
        assert found[0]["status"] == status, found
        return found[0]

    result: Obj = await eventually(check, timeout=LONG_TIMEOUT)
    return result


async def event_notes(api: KubeClient, ns: str, reason: str) -> list[str]:
    async def check() -> list[str]:
        return [str(e["note"]) for e in await api.list(EVENTS, ns) if e.get("reason") == reason]

    notes: list[str] = await eventually(check, timeout=LONG_TIMEOUT)
    return notes


async def plan(cluster: LocalCluster, ns: str, manifest: Obj, tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name}.yaml"
    await asyncio.to_thread(path.write_text, yaml.safe_dump(manifest))
    result = await run_lws(cluster, "plan", "-f", str(path), "-n", ns)
    assert result.code == 0, result.err
    print(f"\n$ lws plan -f {name}.yaml\n{result.out}")  # the docs' capture (pytest -s)
    return " ".join(result.out.split())  # rich wraps lines at the terminal's width


def print_timeline(events: list[Obj]) -> None:
    """The set's events in order, for the docs' capture (pytest -s); nothing is asserted on times."""
    ours = [e for e in events if (e.get("regarding") or {}).get("kind") == c.LWS_KIND]
    ours.sort(key=lambda e: str(e.get("eventTime") or e["metadata"]["creationTimestamp"]))
    print("\n$ kubectl get events (the LeaderWorkerSet's, in order)")
    for event in ours:
        when = str(event.get("eventTime") or event["metadata"]["creationTimestamp"])
        print(f"{when[11:23]}  {event['type']:<7} {event['reason']:<18} {event['note']}")


def reconciled(manager: ManagerProcess) -> bool:
    """The manager's LWS controller has finished a reconcile since it started."""
    prefix = 'controller_runtime_reconcile_total{controller="leaderworkerset"'
    return any(
        line.startswith(prefix) and float(line.rsplit(" ", 1)[1]) > 0
        for line in manager.scrape().splitlines()
    )


async def test_a_surge_that_cannot_schedule_falls_back_without_surge_and_resumes_with_capacity(
    api: KubeClient, ns: str, full_cluster: LocalCluster, tmp_path: Path, restartable_manager: ManagerProcess
) -> None:
    nodes = [pool_node(ns, i) for i in range(4)]
    try:
        for node in nodes[:3]:
            await api.create(NODES, node)
        await create(api, gpu_lws(ns))
        await expect_groups_available(api, ns, REPLICAS, name=NAME)
        old = {o: p["metadata"]["uid"] for o, p in (await leaders(api, ns)).items()}
        assert sorted(old) == [0, 1, 2]

        # 1. Upstream's behaviour: the plan warns, the surge group stays Pending, nothing moves.
        out = await plan(full_cluster, ns, gpu_lws(ns, NEW_IMAGE), tmp_path, "without-annotation")
        assert "do not fit on the eligible nodes (8 nvidia.com/gpu needed, 0 nvidia.com/gpu free)" in out
        await update_worker_image(api, ns, name=NAME)

        async def surge_pending() -> bool:
            pods = await leaders(api, ns)
            assert 3 in pods, "no surge group yet"
            assert unschedulable(pods[3]), "the surge group is not Pending yet"
            return True

        await eventually(surge_pending, timeout=LONG_TIMEOUT)  # the positive sign

        async def stalled() -> bool:
            assert await leader_sts(api, ns) == (3, 4)
            now = {o: p["metadata"]["uid"] for o, p in (await leaders(api, ns)).items() if o < REPLICAS}
            assert now == old, "an old group was replaced"
            return True

        await consistently(stalled, duration=HOLD, interval=0.5)
        assert not [e for e in await api.list(EVENTS, ns) if e.get("reason") == ext.EVENT_SURGE_FALLBACK]

        # 2. With the annotation: without surge, one group at a time.
        annotated = gpu_lws(ns, NEW_IMAGE)
        annotated["metadata"]["annotations"] = {ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"}
        out = await plan(full_cluster, ns, annotated, tmp_path, "with-annotation")
        assert "in-place path: the 1 surge group(s) do not fit" in out
        assert (
            "after 5s unschedulable the surge is given back and groups are replaced in place, 1 at a time"
            in out
        )
        down: list[int] = []

        def observe(pods: dict[str, Obj]) -> None:
            groups = {group_of(p): p for p in pods.values() if is_leader(p)}
            missing = sum(1 for o in range(REPLICAS) if o not in groups or not ready(groups[o]))
            down.append(missing)

        async with Watch(api, PODS, ns, observe):
            patch = {"metadata": {"annotations": {ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"}}}
            await api.merge_patch(LEADERWORKERSETS, ns, NAME, patch)
            fallback = await surge_condition(api, ns, c.CONDITION_TRUE)
            assert fallback["reason"] == ext.REASON_SURGE_UNSCHEDULABLE
            assert "surge group 3 unschedulable for" in fallback["message"]
            [note] = await event_notes(api, ns, ext.EVENT_SURGE_FALLBACK)
            assert note.startswith(f"Rollout of {NAME}: surge group 3 unschedulable for "), note

            async def groups_1_and_2_replaced_without_surge() -> bool:
                pods = await leaders(api, ns)
                revision = {o: labels(p)[c.LABEL_TEMPLATE_REVISION_HASH] for o, p in pods.items()}
                assert sorted(pods) == [0, 1, 2], sorted(pods)
                assert pods[0]["metadata"]["uid"] == old[0]
                assert all(pods[o]["metadata"]["uid"] != old[o] and ready(pods[o]) for o in (1, 2)), revision
                assert await leader_sts(api, ns) == (1, 3)
                return True

            await eventually(groups_1_and_2_replaced_without_surge, timeout=LONG_TIMEOUT)
        assert max(down) == 1, f"groups down at once: {max(down)}"
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        assert ext.ANNOTATION_SURGE_FALLBACK_SINCE in lws["metadata"]["annotations"]
        status = await lws_ok(full_cluster, "status", NAME, "-n", ns)
        print(f"\n$ lws status {NAME}\n{status}")
        assert "surge given back since" in " ".join(status.split())

        # The fallback survives a manager crash: the restarted one keeps replacing without surge (a
        # manager that lost the state would surge again at once, then fall back a second time).
        since = lws["metadata"]["annotations"][ext.ANNOTATION_SURGE_FALLBACK_SINCE]
        restartable_manager.kill()
        await restartable_manager.start()
        await eventually(lambda: reconciled(restartable_manager), timeout=LONG_TIMEOUT)

        async def still_without_surge() -> bool:
            assert await leader_sts(api, ns) == (1, 3)
            stored = await api.get(LEADERWORKERSETS, ns, NAME)
            assert stored["metadata"]["annotations"][ext.ANNOTATION_SURGE_FALLBACK_SINCE] == since
            return True

        await consistently(still_without_surge, duration=HOLD, interval=0.5)

        # 3. Capacity returns: surge again, the surge group lands on the new node.
        await api.create(NODES, nodes[3])
        resumed = await surge_condition(api, ns, c.CONDITION_FALSE)
        assert resumed["reason"] == ext.REASON_SURGE_RESUMED
        [note] = await event_notes(api, ns, ext.EVENT_SURGE_RESUMED)
        assert "8 nvidia.com/gpu free, a surge group needs 8 nvidia.com/gpu: surging again" in note, note

        async def surge_placed() -> bool:
            pods = await leaders(api, ns)
            assert 3 in pods, "no surge group yet"
            assert pods[3]["spec"].get("nodeName") == nodes[3]["metadata"]["name"]
            assert ready(pods[3])
            assert await leader_sts(api, ns) == (1, 4)
            return True

        await eventually(surge_placed, timeout=LONG_TIMEOUT)
        status = await lws_ok(full_cluster, "status", NAME, "-n", ns)
        print(f"\n$ lws status {NAME}\n{status}")
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        assert ext.ANNOTATION_SURGE_FALLBACK_SINCE not in (lws["metadata"].get("annotations") or {})

        # 4. The user lets group 0 go too: the rollout completes with surge.
        partition = {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 0}}}}
        await api.merge_patch(LEADERWORKERSETS, ns, NAME, partition)
        await expect_groups_available(api, ns, REPLICAS, name=NAME)

        async def done() -> bool:
            assert await leader_sts(api, ns) == (0, 3)
            assert all(p["metadata"]["uid"] != old[o] for o, p in (await leaders(api, ns)).items())
            return True

        await eventually(done, timeout=LONG_TIMEOUT)
        assert len(await event_notes(api, ns, ext.EVENT_SURGE_FALLBACK)) == 1  # it did not flap
        print_timeline(await api.list(EVENTS, ns))
    finally:
        await api.delete(LEADERWORKERSETS, ns, NAME)
        for node in nodes:
            with contextlib.suppress(Exception):  # a node the test never created
                await api.delete(NODES, None, node["metadata"]["name"])
