"""Capacity-aware surge against the real API server (core/rollout/surgefallback/decision.py): the test plays
the StatefulSet controller, the scheduler and the kubelet; the LWS controller runs in-process with
the webhooks off, so a bad annotation value reaches it. kube-scheduler itself decides in the e2e
journey (tests/e2e/test_capacity_aware_surge.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import format_time
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.integration.controllers.test_rolling_update import NAME, worker_container
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
REPLICAS = 2


async def _start(api: KubeClient, ns: str, **annotations: str) -> Obj:
    """Two ready groups, maxSurge 1 and maxUnavailable 0, then a new template: the surge group 2."""
    builder = LeaderWorkerSetBuilder(ns).replicas(REPLICAS).max_surge(1).max_unavailable(0)
    lws = await api.create(LEADERWORKERSETS, builder.annotations(annotations).obj())
    await kubelet.create_leader_pods(api, lws, 0, REPLICAS)
    await kubelet.set_groups_ready(api, ns, REPLICAS)
    await expect.expect_available_condition(api, ns)
    lws = await kubelet.update_lws(api, ns, NAME, worker_container("new-worker"))
    await _expect_sts(api, ns, partition=REPLICAS, replicas=REPLICAS + 1)
    return lws


async def _expect_sts(api: KubeClient, ns: str, *, partition: int, replicas: int) -> None:
    async def check() -> bool:
        sts = await api.get(STATEFULSETS, ns, NAME)
        got = (sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"], sts["spec"]["replicas"])
        assert got == (partition, replicas), got
        return True

    await eventually(check)


async def _surge_pod_unschedulable(api: KubeClient, lws: Obj, seconds_ago: float) -> None:
    """The StatefulSet controller creates the surge leader; the scheduler cannot place it."""
    [pod] = await kubelet.create_leader_pods(api, lws, REPLICAS, REPLICAS + 1)
    since = format_time(datetime.now(UTC) - timedelta(seconds=seconds_ago))
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        "lastTransitionTime": since,
    }
    await api.patch_status(
        PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], {"status": {"conditions": [condition]}}
    )


async def _condition(api: KubeClient, ns: str, condition_type: str) -> Obj:
    async def check() -> Obj:
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        found = [
            cond
            for cond in (lws.get("status") or {}).get("conditions") or []
            if cond["type"] == condition_type
        ]
        assert found, f"no {condition_type} yet"
        return found[0]

    result: Obj = await eventually(check)
    return result


async def test_an_unschedulable_surge_is_given_back_and_the_state_kept_on_the_lws(
    api: KubeClient, ns: str
) -> None:
    lws = await _start(api, ns, **{ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5"})
    await _surge_pod_unschedulable(api, lws, seconds_ago=30)
    # The surge goes and group 1 is released for an update without surge.
    await _expect_sts(api, ns, partition=REPLICAS - 1, replicas=REPLICAS)
    cond = await _condition(api, ns, ext.CONDITION_SURGE_FALLBACK)
    assert (cond["status"], cond["reason"]) == (c.CONDITION_TRUE, ext.REASON_SURGE_UNSCHEDULABLE)
    assert cond["message"].startswith("surge group 2 unschedulable for ")
    assert "3 Insufficient nvidia.com/gpu." in cond["message"]
    stored = await api.get(LEADERWORKERSETS, ns, NAME)
    assert ext.ANNOTATION_SURGE_FALLBACK_SINCE in stored["metadata"]["annotations"]
    # The recorder sends events in the background.
    note = f"Rollout of {NAME}: {cond['message']}"
    await expect.expect_event(api, ns, ext.EVENT_SURGE_FALLBACK, note, type_="Warning")
    # Metadata only: the write started no rollout (one revision more than the template change made).
    assert stored["metadata"]["generation"] == lws["metadata"]["generation"]

    # The StatefulSet controller's part: the surge group goes, group 1 comes back on the new template.
    await kubelet.delete_groups(api, ns, REPLICAS, REPLICAS + 1)
    await kubelet.set_group_ready(api, ns, f"{NAME}-1")
    await _expect_sts(api, ns, partition=0, replicas=REPLICAS)
    await kubelet.set_group_ready(api, ns, f"{NAME}-0")
    await expect.expect_status_replicas(api, ns, ready=REPLICAS, updated=REPLICAS)

    # The rollout ended without surge: the state goes, the condition says why.
    async def ended() -> bool:
        done = await api.get(LEADERWORKERSETS, ns, NAME)
        assert ext.ANNOTATION_SURGE_FALLBACK_SINCE not in done["metadata"].get("annotations", {})
        [cond] = [c_ for c_ in done["status"]["conditions"] if c_["type"] == ext.CONDITION_SURGE_FALLBACK]
        assert (cond["status"], cond["reason"]) == (c.CONDITION_FALSE, ext.REASON_SURGE_ROLLOUT_COMPLETE)
        return True

    await eventually(ended)
    assert len(await expect.events_with(api, ns, ext.EVENT_SURGE_FALLBACK)) == 1
    assert await expect.events_with(api, ns, ext.EVENT_SURGE_RESUMED) == []


async def test_a_bad_value_without_webhooks_is_reported_and_the_surge_kept(api: KubeClient, ns: str) -> None:
    lws = await _start(api, ns, **{ext.ANNOTATION_SURGE_FALLBACK_SECONDS: "5m"})
    cond = await _condition(api, ns, ext.CONDITION_SURGE_FALLBACK_INVALID)
    want = (
        f"annotation {ext.ANNOTATION_SURGE_FALLBACK_SECONDS}: '5m' is invalid: must be a whole number of "
        "seconds from 1 to 86400; the surge is never given back (as upstream)"
    )
    assert (cond["status"], cond["reason"], cond["message"]) == (
        c.CONDITION_TRUE,
        ext.REASON_INVALID_ANNOTATION,
        want,
    )
    await expect.expect_event(api, ns, ext.EVENT_INVALID_SURGE_FALLBACK, want, type_="Warning")
    # Ignored (the condition above says the controller processed the set): an unschedulable surge
    # stays, as upstream's.
    await _surge_pod_unschedulable(api, lws, seconds_ago=30)

    async def surge_kept() -> bool:
        sts = await api.get(STATEFULSETS, ns, NAME)
        return bool(sts["spec"]["replicas"] == REPLICAS + 1)

    await consistently(surge_kept, duration=3.0)
    stored = await api.get(LEADERWORKERSETS, ns, NAME)
    assert ext.ANNOTATION_SURGE_FALLBACK_SINCE not in (stored["metadata"].get("annotations") or {})
    types = {cond["type"] for cond in stored["status"]["conditions"]}
    assert ext.CONDITION_SURGE_FALLBACK not in types
