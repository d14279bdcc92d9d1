"""Capacity-aware surge of a DisaggregatedSet on the full cluster: one role of 3
one-pod groups of 8 GPUs on this test's 3 kwok nodes of 8 GPUs, maxSurge 1, maxUnavailable 0, and a
new image. Without the annotation the target revision's surge replica stays Pending and no old one
drains (as upstream); with `surge-fallback-seconds: "5"` the set gives the surge back, drains one old
replica at a time and the Pending new one takes its place, until the rollout completes. kube-scheduler
decides; the manager (DS and LWS controllers) runs as a separate process."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, EVENTS, LEADERWORKERSETS, NODES, PODS
from tests.e2e.test_capacity_aware_surge import GPU, HOLD, POOL, pool_node, unschedulable
from tests.integration.disaggregatedset.helpers import DS, create, live_children, revision_of, update_spec
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.expect import expect_ds_available
from tests.support.lwsapi import NEW_IMAGE
from tests.support.wait import LONG_TIMEOUT, consistently, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
ROLE = "decode"
REPLICAS = 3


def gpu_ds(ns: str) -> Obj:
    # A DS needs two roles; the other one is small, without accelerators, on the shared nodes.
    ds = DisaggregatedSetBuilder(ns).role("prefill", 1).role(ROLE, REPLICAS).role_rollout(ROLE, 1, 0).obj()
    spec = ds["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["containers"][0]["resources"] = {"requests": {GPU: "8"}, "limits": {GPU: "8"}}
    spec["nodeSelector"] = {POOL: ns}
    spec["tolerations"] = [{"key": POOL, "operator": "Equal", "value": ns, "effect": "NoSchedule"}]
    return ds


def new_image(spec: Obj) -> None:
    spec["roles"][0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
        NEW_IMAGE
    )


async def children_by_revision(api: KubeClient, ns: str) -> dict[str, tuple[int, int]]:
    """revision -> (spec replicas, ready replicas) of the role's children."""
    found = {}
    for lws in (await live_children(api, ns)).values():
        if lws["metadata"]["labels"].get(c.LABEL_DS_ROLE) != ROLE:
            continue
        revision = lws["metadata"]["labels"][c.LABEL_DS_REVISION]
        found[revision] = (
            int(lws["spec"].get("replicas", 1)),
            int((lws.get("status") or {}).get("readyReplicas", 0)),
        )
    return found


async def ds_surge_condition(api: KubeClient, ns: str, status: str) -> Obj:
    async def check() -> Obj:
        ds = await api.get(DISAGGREGATEDSETS, ns, DS)
        conditions = (ds.get("status") or {}).get("conditions") or []
        found = [cond for cond in conditions if cond["type"] == ext.CONDITION_SURGE_FALLBACK]
        assert found, "no SurgeFallback condition yet"
        assert found[0]["status"] == status, found
        return found[0]

    result: Obj = await eventually(check, timeout=LONG_TIMEOUT)
    return result


async def test_a_disaggregatedset_whose_surge_cannot_schedule_rolls_without_surge(
    api: KubeClient, ns: str
) -> None:
    nodes = [pool_node(ns, i) for i in range(3)]
    try:
        for node in nodes:
            await api.create(NODES, node)
        ds = await create(api, gpu_ds(ns))
        await expect_ds_available(api, ns, {"prefill": 1, ROLE: REPLICAS})
        old = revision_of(ds)

        # Upstream's behaviour first: the new revision's surge replica is Pending, nothing drains.
        new = revision_of(await update_spec(api, ns, new_image))

        async def surge_pending() -> bool:
            pods = await api.list(PODS, ns)
            labels = [p["metadata"]["labels"] for p in pods]
            pending = [
                p
                for p, label in zip(pods, labels, strict=True)
                if label.get(c.LABEL_DS_REVISION) == new and label.get(c.LABEL_DS_ROLE) == ROLE
            ]
            assert pending, "no pod of the new revision yet"
            assert all(unschedulable(p) for p in pending), "the surge replica is not Pending"
            return True

        await eventually(surge_pending, timeout=LONG_TIMEOUT)

        async def stalled() -> bool:
            assert (await children_by_revision(api, ns))[old] == (REPLICAS, REPLICAS)
            return True

        await consistently(stalled, duration=HOLD, interval=0.5)

        # Opted in: without surge, never more than one replica of the role down.
        lowest: list[int] = []

        def observe(children: dict[str, Obj]) -> None:
            ready = sum(
                int((lws.get("status") or {}).get("readyReplicas", 0))
                for lws in children.values()
                if lws["metadata"]["labels"].get(c.LABEL_DS_ROLE) == ROLE
            )
            lowest.append(ready)

        async with Watch(api, LEADERWORKERSETS, ns, observe):
            patch = {"metadata": {"annotations": {ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"}}}
            await api.merge_patch(DISAGGREGATEDSETS, ns, DS, patch)
            fallback = await ds_surge_condition(api, ns, c.CONDITION_TRUE)
            assert fallback["message"].startswith(f"role {ROLE} surge group 0 unschedulable for "), fallback
            await expect_ds_available(api, ns, {"prefill": 1, ROLE: REPLICAS})

            async def only_new() -> bool:
                assert set(await children_by_revision(api, ns)) == {new}
                return True

            await eventually(only_new, timeout=LONG_TIMEOUT)
        assert min(lowest[1:]) >= REPLICAS - 1, f"ready replicas went down to {min(lowest)}"
        done = await ds_surge_condition(api, ns, c.CONDITION_FALSE)
        assert done["reason"] == ext.REASON_SURGE_ROLLOUT_COMPLETE
        stored = await api.get(DISAGGREGATEDSETS, ns, DS)
        assert ext.ANNOTATION_SURGE_FALLBACK_SINCE not in (stored["metadata"].get("annotations") or {})
        notes = [e["note"] for e in await api.list(EVENTS, ns) if e.get("reason") == ext.EVENT_SURGE_FALLBACK]
        assert len(notes) == 1, notes
    finally:
        with contextlib.suppress(Exception):
            await api.delete(DISAGGREGATEDSETS, ns, DS)
        for node in nodes:
            with contextlib.suppress(Exception):  # a node the test never created
                await api.delete(NODES, None, node["metadata"]["name"])
