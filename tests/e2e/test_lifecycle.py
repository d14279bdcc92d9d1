"""v1.0 group lifecycle journeys on the full local cluster (real StatefulSet, garbage collector and
scheduler controllers, kwok nodes), with `lws manager` as a separate process: bounded group
recovery (maxGroupRestarts), the Degraded condition and the `recover` annotation.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.objects import name_of
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.cli import lws_ok
from tests.support.expect import (
    events_with,
    expect_condition,
    expect_deployed,
    expect_event,
    expect_first_group_back,
)
from tests.support.lwsapi import create, lws_revisions, pods_by_name
from tests.support.manager import ManagerProcess
from tests.support.objects import LEADER, WORKER, is_ready, uid
from tests.support.wait import LONG_TIMEOUT, consistently, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]


def _occurrences(events: list[dict[str, Any]]) -> int:
    return sum(int((e.get("series") or {}).get("count") or 1) for e in events)


async def _expect_retained(api: KubeClient, ns: str, leader_uid: str) -> None:
    """The exhausted leader stays: terminating, held by the budget finalizer, same incarnation."""

    async def retained() -> bool:
        leader = await api.get(PODS, ns, LEADER)
        meta = leader["metadata"]
        return (
            uid(leader) == leader_uid
            and meta.get("deletionTimestamp") is not None
            and c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP in (meta.get("finalizers") or [])
            and (meta.get("annotations") or {}).get(c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED) == "true"
        )

    await eventually(retained, timeout=LONG_TIMEOUT)
    await consistently(retained)


async def _restart_counts(api: KubeClient, ns: str) -> dict[str, int]:
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    raw = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_GROUP_RESTART_COUNTS)
    return {} if raw is None else dict(json.loads(raw))


async def _expect_unavailable_while_degraded(api: KubeClient, ns: str) -> None:
    """Available is False for the current generation. Its reason and message depend on a race that
    upstream's setCondition leaves visible: if a round saw the failing group down before its leader
    was marked exhausted, Progressing=True already flipped Available to False, keeping "All replicas
    are ready"; a condition whose status and generation are unchanged is not rewritten, so the
    budget's False form is only written when Available was still True."""
    expected = {
        (c.REASON_REPLICA_RESTART_BUDGET_EXCEEDED, c.MESSAGE_AVAILABLE_FALSE_DEGRADED),
        (c.REASON_ALL_GROUPS_READY, c.MESSAGE_ALL_GROUPS_READY),
    }

    async def unavailable() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, NAME)
        conditions = {d["type"]: d for d in (lws.get("status") or {}).get("conditions") or []}
        available = conditions.get(c.CONDITION_AVAILABLE) or {}
        assert available.get("status") == c.CONDITION_FALSE, available
        assert available.get("observedGeneration") == lws["metadata"]["generation"], available
        assert (available.get("reason"), available.get("message")) in expected, available
        return True

    await eventually(unavailable)


async def test_a_crash_looping_group_stops_after_max_group_restarts_and_recover_brings_it_back(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    replicas, size, limit = 2, 3, 2
    await create(
        api, LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).max_group_restarts(limit).obj()
    )
    await expect_deployed(api, ns, replicas, size)
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    other_leader_uid = uid(await api.get(PODS, ns, f"{NAME}-1"))

    leader_uid = uid(await api.get(PODS, ns, LEADER))
    async with Watch(api, PODS, ns, lambda _: None) as watch:
        for recreation in range(1, limit + 1):
            await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
            leader_uid = await expect_first_group_back(api, ns, leader_uid, size)
            assert list((await _restart_counts(api, ns)).values()) == [recreation]

        # One failure too many: the group is stopped and retained, not recreated.
        await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
        await _expect_retained(api, ns, leader_uid)
        # The original leader and one per recreation, never more (events fold repeats into a
        # series, so incarnations are counted from the watch).
        leader_incarnations = {uid(p) for p in watch.added if p["metadata"]["name"] == LEADER}
        assert len(leader_incarnations) == limit + 1, leader_incarnations
    assert _occurrences(await events_with(api, ns, c.EVENT_RECREATE_GROUP)) == limit
    note = "Restart budget exhausted; terminated group 0 and stopped automatic recovery"
    await expect_event(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED, note, "Warning")
    await expect_condition(api, ns, c.CONDITION_DEGRADED, c.CONDITION_TRUE, c.MESSAGE_DEGRADED_TRUE)
    await _expect_unavailable_while_degraded(api, ns)

    assert list((await _restart_counts(api, ns)).values()) == [limit]
    assert uid(await api.get(PODS, ns, f"{NAME}-1")) == other_leader_uid, "the other group was touched"

    # recover=true on the retained leader: released, recreated with a fresh budget.
    await api.merge_patch(PODS, ns, LEADER, {"metadata": {"annotations": {c.ANNOTATION_RECOVER: "true"}}})
    await expect_first_group_back(api, ns, leader_uid, size)
    await expect_deployed(api, ns, replicas, size)
    await expect_condition(api, ns, c.CONDITION_DEGRADED, c.CONDITION_FALSE, c.MESSAGE_DEGRADED_FALSE)
    assert await _restart_counts(api, ns) == {}


@pytest.mark.parametrize(
    "count_written",
    [
        pytest.param(False, id="killed after the claim, before the count write"),
        pytest.param(True, id="killed after the count write, before the leader delete"),
    ],
)
async def test_manager_killed_mid_budget_write_counts_the_failure_exactly_once(
    api: KubeClient,
    ns: str,
    full_cluster: LocalCluster,
    restartable_manager: ManagerProcess,
    count_written: bool,
) -> None:
    """The manager is SIGKILLed with the budget half-written (the claim on the leader, with or
    without the count on the LWS) and the failure it was handling still pending. After the restart
    the group is recreated once and charged exactly one restart."""
    await create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).max_group_restarts(3).obj())
    await expect_deployed(api, ns, 1, 2)
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    leader_uid = uid(await api.get(PODS, ns, LEADER))
    key = (await api.get(PODS, ns, LEADER))["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] + "/0"

    # What the killed manager's writes left behind (written first: the pod and LWS webhooks are
    # served by the manager, so nothing can be written to them while it is down).
    claim = {ext.ANNOTATION_GROUP_RESTART_CLAIM: "1"}
    await api.merge_patch(PODS, ns, LEADER, {"metadata": {"annotations": claim}})
    if count_written:
        counts = {c.ANNOTATION_GROUP_RESTART_COUNTS: json.dumps({key: 1})}
        await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"metadata": {"annotations": counts}})
    restartable_manager.kill()
    await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
    await restartable_manager.start()

    await expect_first_group_back(api, ns, leader_uid, 2)
    await expect_deployed(api, ns, 1, 2)

    async def charged_once() -> bool:
        return await _restart_counts(api, ns) == {key: 1}

    await eventually(charged_once)
    await consistently(charged_once)


async def test_changing_max_group_restarts_restarts_no_pod_and_applies_at_the_next_failure(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    """On the full cluster: the restart budget is a live setting (KEP-820). Raising it after a
    recreation starts no rollout (no revision, no pod recreated or restarted) and keeps the count;
    the next failure is then recreated where the old limit would have stopped the group. Lowering
    it below the count stops nothing by itself; the next failure exhausts the group. The LWS
    status, `lws status` and the failure ledger tell the same story."""
    replicas, size = 2, 2
    await create(api, LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).max_group_restarts(1).obj())
    await expect_deployed(api, ns, replicas, size)
    rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
    other_leader_uid = uid(await api.get(PODS, ns, f"{NAME}-1"))
    leader_uid = uid(await api.get(PODS, ns, LEADER))

    await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
    leader_uid = await expect_first_group_back(api, ns, leader_uid, size)
    assert list((await _restart_counts(api, ns)).values()) == [1]
    revisions = sorted(name_of(r) for r in await lws_revisions(api, ns))

    async with Watch(api, PODS, ns, lambda _: None) as watch:
        existing = len(watch.added)
        await _set_budget_and_wait_processed(api, ns, 3)
        await _expect_untouched(api, ns, revisions, [1])
        assert watch.added[existing:] == [], "a pod was created after the budget change"

        await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
        leader_uid = await expect_first_group_back(api, ns, leader_uid, size)
        assert list((await _restart_counts(api, ns)).values()) == [2]

        await _set_budget_and_wait_processed(api, ns, 1)
        await _expect_untouched(api, ns, revisions, [2])
        conditions = (await api.get(LEADERWORKERSETS, ns, NAME))["status"].get("conditions") or []
        assert not [d for d in conditions if d["type"] == c.CONDITION_DEGRADED and d["status"] == "True"]

        await asyncio.to_thread(chaos.restart_container, rest, ns, WORKER)
        await _expect_retained(api, ns, leader_uid)
    assert list((await _restart_counts(api, ns)).values()) == [2]  # exhaustion charges nothing
    await expect_condition(api, ns, c.CONDITION_DEGRADED, c.CONDITION_TRUE, c.MESSAGE_DEGRADED_TRUE)
    assert uid(await api.get(PODS, ns, f"{NAME}-1")) == other_leader_uid, "the other group was touched"
    assert sorted(name_of(r) for r in await lws_revisions(api, ns)) == revisions

    doc = json.loads(await lws_ok(full_cluster, "status", NAME, "-n", ns, "--failures", "-o", "json"))
    assert [e["action"] for e in doc["failures"]] == ["recreated", "recreated", "budget-exhausted"]
    tree = await lws_ok(full_cluster, "status", NAME, "-n", ns)
    assert "restart budget exhausted" in tree, tree


async def _set_budget_and_wait_processed(api: KubeClient, ns: str, budget: int) -> None:
    """Edit maxGroupRestarts, then wait for the positive sign that the controller read the edit:
    the status reports the new generation."""
    patch = {"spec": {"leaderWorkerTemplate": {"maxGroupRestarts": budget}}}
    generation = (await api.merge_patch(LEADERWORKERSETS, ns, NAME, patch))["metadata"]["generation"]

    async def observed() -> bool:
        status = (await api.get(LEADERWORKERSETS, ns, NAME)).get("status") or {}
        return bool(status.get("observedGeneration") == generation)

    await eventually(observed, timeout=LONG_TIMEOUT)


async def _expect_untouched(api: KubeClient, ns: str, revisions: list[str], counts: list[int]) -> None:
    """No revision made, every pod Ready in its incarnation with no restart added, the count kept."""

    def state(pod: Obj) -> tuple[str, bool, int]:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        return uid(pod), is_ready(pod), sum(int(s.get("restartCount") or 0) for s in statuses)

    before = {name: state(p) for name, p in (await pods_by_name(api, ns)).items()}

    async def untouched() -> bool:
        assert sorted(name_of(r) for r in await lws_revisions(api, ns)) == revisions
        now = {name: state(p) for name, p in (await pods_by_name(api, ns)).items()}
        assert now == before
        assert all(ready for _, ready, _ in now.values())
        assert list((await _restart_counts(api, ns)).values()) == counts
        return True

    await consistently(untouched)
