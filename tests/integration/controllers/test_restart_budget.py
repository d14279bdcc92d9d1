"""Bounded group recovery against the real API server (`maxGroupRestarts`, `Degraded`):
the test plays the StatefulSet controller, the garbage collector and the kubelet.

Each scenario is upstream's integration scenario for maxGroupRestarts (restart counted, exhaustion
retains the group, recover, release on LWS deletion and scale-down) or one of ours for the
crash-safety of the count (a claim recorded before a crash is finished, never counted twice).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle.ledger import ledger_name
from leaderworkerset.core.rollout import revision
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONFIGMAPS,
    CONTROLLER_REVISIONS,
    LEADERWORKERSETS,
    PODS,
    STATEFULSETS,
)
from tests.support import expect, kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
FINALIZER = c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP
Obj = dict[str, Any]


# ----- helpers: what the other components would do ------------------------------------------------


async def _start_group(api: KubeClient, ns: str, index: int) -> str:
    """Leader `<lws>-<index>` at the current revision with its workers; returns the leader name."""
    lws = await kubelet.get_lws(api, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, lws, index, index + 1))[0]
    await kubelet.create_worker_pods(api, lws, leader)
    return str(leader["metadata"]["name"])


async def _pods(api: KubeClient, ns: str, group: int) -> list[Obj]:
    selector = f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_GROUP_INDEX}={group}"
    return await api.list(PODS, ns, label_selector=selector)


async def _finish_deletion(api: KubeClient, ns: str, group: int) -> None:
    await kubelet.finish_group_deletion(api, ns, group, NAME)


async def _counts(api: KubeClient, ns: str) -> dict[str, int]:
    lws = await kubelet.get_lws(api, ns, NAME)
    raw = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_GROUP_RESTART_COUNTS)
    return {} if raw is None else dict(json.loads(raw))


async def _expect_counts(api: KubeClient, ns: str, want: Callable[[str], dict[str, int]]) -> None:
    async def check() -> bool:
        key = kubelet.current_revision_key(await kubelet.get_lws(api, ns, NAME))
        got = await _counts(api, ns)
        assert got == want(key), f"counts {got}, want {want(key)}"
        return True

    await eventually(check)
    await consistently(check)


async def _fail(api: KubeClient, ns: str, group: int) -> None:
    """A worker container of the group crashes once."""
    await kubelet.restart_container(api, ns, f"{NAME}-{group}-1")


async def _expect_exhausted(api: KubeClient, ns: str, group: int) -> None:
    async def held() -> bool:
        pods = await _pods(api, ns, group)
        assert len(pods) == 3, [p["metadata"]["name"] for p in pods]
        for pod in pods:
            meta = pod["metadata"]
            assert FINALIZER in (meta.get("finalizers") or []), f"{meta['name']} not held"
            if meta["labels"][c.LABEL_WORKER_INDEX] == "0":
                annotations = meta.get("annotations") or {}
                assert annotations.get(c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED) == "true"
                assert meta.get("deletionTimestamp"), "exhausted leader not deleted"
        return True

    await eventually(held)
    note = f"Restart budget exhausted; terminated group {group} and stopped automatic recovery"
    await expect.expect_event(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED, note, "Warning")


async def _expect_released(api: KubeClient, ns: str, group: int) -> None:
    async def released() -> bool:
        for pod in await _pods(api, ns, group):
            meta = pod["metadata"]
            assert FINALIZER not in (meta.get("finalizers") or []), f"{meta['name']} still held"
            annotations = meta.get("annotations") or {}
            assert c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED not in annotations
            assert c.ANNOTATION_RECOVER not in annotations
        return True

    await eventually(released)


async def _expect_not_degraded(api: KubeClient, ns: str) -> None:
    """No group is retained: the set has no Degraded=True (upstream adds Degraded only once a group
    has exhausted its budget, so a set that never had one carries no Degraded condition at all)."""

    async def check() -> bool:
        lws = await kubelet.get_lws(api, ns, NAME)
        conditions = (lws.get("status") or {}).get("conditions") or []
        degraded = [cond for cond in conditions if cond["type"] == c.CONDITION_DEGRADED]
        assert all(cond["status"] == c.CONDITION_FALSE for cond in degraded), degraded
        return True

    await consistently(check)


async def _expect_degraded(api: KubeClient, ns: str, status: str) -> None:
    message = c.MESSAGE_DEGRADED_TRUE if status == c.CONDITION_TRUE else c.MESSAGE_DEGRADED_FALSE
    await expect.expect_condition(api, ns, c.CONDITION_DEGRADED, status, message)


# ----- scenarios ---------------------------------------------------------------------------------------


async def counted_then_exhausted_then_recovered(api: KubeClient, ns: str) -> None:
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    note = f"Worker pod {NAME}-0-1 failed, deleted leader pod {NAME}-0 to recreate group 0"
    await expect.expect_event(api, ns, c.EVENT_RECREATE_GROUP, note)
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 1})

    await _finish_deletion(api, ns, 0)
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await _expect_exhausted(api, ns, 0)
    await _expect_degraded(api, ns, c.CONDITION_TRUE)
    await expect.expect_condition(
        api, ns, c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.MESSAGE_PROGRESSING_FALSE_DEGRADED
    )
    # Exhaustion does not consume: the count stays at the limit; one RecreateGroup in total.
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 1})
    assert len(await expect.events_with(api, ns, c.EVENT_RECREATE_GROUP)) == 1

    await api.merge_patch(
        PODS, ns, f"{NAME}-0", {"metadata": {"annotations": {c.ANNOTATION_RECOVER: "true"}}}
    )
    await _expect_released(api, ns, 0)
    await _expect_counts(api, ns, lambda _key: {})

    await _finish_deletion(api, ns, 0)
    await _start_group(api, ns, 0)
    await kubelet.set_group_ready(api, ns, f"{NAME}-0")
    await expect.expect_available_condition(api, ns)
    await _expect_degraded(api, ns, c.CONDITION_FALSE)


async def recover_set_before_exhaustion_is_dropped(api: KubeClient, ns: str) -> None:
    leader = await _start_group(api, ns, 0)
    await api.merge_patch(PODS, ns, leader, {"metadata": {"annotations": {c.ANNOTATION_RECOVER: "true"}}})
    await _fail(api, ns, 0)
    await _expect_exhausted(api, ns, 0)

    async def dropped() -> bool:
        pod = await api.get(PODS, ns, leader)
        return c.ANNOTATION_RECOVER not in (pod["metadata"].get("annotations") or {})

    await eventually(dropped)
    await consistently(dropped)


async def lws_deletion_releases(api: KubeClient, ns: str) -> None:
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await _expect_exhausted(api, ns, 0)
    await api.delete(LEADERWORKERSETS, ns, NAME)
    await _expect_released(api, ns, 0)


async def scale_down_releases(api: KubeClient, ns: str) -> None:
    await _start_group(api, ns, 0)
    await _start_group(api, ns, 1)
    await _fail(api, ns, 1)
    await _expect_exhausted(api, ns, 1)

    def scale(lws: Obj) -> None:
        lws["spec"]["replicas"] = 1

    await kubelet.update_lws(api, ns, NAME, scale)
    await _expect_released(api, ns, 1)
    # Group 0 is untouched.
    await expect.expect_pod_not_deleting(api, ns, f"{NAME}-0")


async def claim_before_crash_counted_once(api: KubeClient, ns: str) -> None:
    """The controller died after recording its claim on the leader, before writing the count:
    the next attempt writes exactly the claimed value."""
    leader = await _start_group(api, ns, 0)
    claim = {ext.ANNOTATION_GROUP_RESTART_CLAIM: "1"}
    await api.merge_patch(PODS, ns, leader, {"metadata": {"annotations": claim}})
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, leader)
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 1})


async def count_written_before_crash_not_recounted(api: KubeClient, ns: str) -> None:
    """The controller died after writing the count, before deleting the leader."""
    leader = await _start_group(api, ns, 0)
    key = kubelet.current_revision_key(await kubelet.get_lws(api, ns, NAME))
    await api.merge_patch(
        PODS, ns, leader, {"metadata": {"annotations": {ext.ANNOTATION_GROUP_RESTART_CLAIM: "1"}}}
    )
    counts = json.dumps({f"{key}/0": 1})
    await api.merge_patch(
        LEADERWORKERSETS, ns, NAME, {"metadata": {"annotations": {c.ANNOTATION_GROUP_RESTART_COUNTS: counts}}}
    )
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, leader)
    await _expect_counts(api, ns, lambda k: {f"{k}/0": 1})


# ----- the budget is a live setting (KEP-820) ----------------------------------------------


async def _group_back_ready(api: KubeClient, ns: str, group: int) -> None:
    await _finish_deletion(api, ns, group)
    await _start_group(api, ns, group)
    await kubelet.set_group_ready(api, ns, f"{NAME}-{group}")


async def _template_state(api: KubeClient, ns: str) -> Obj:
    """What a rollout would change: the set's revisions, the leader StatefulSet's key and template,
    and the group's leader incarnation."""
    revisions = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    sts = await api.get(STATEFULSETS, ns, NAME)
    leader = await api.get(PODS, ns, f"{NAME}-0")
    return {
        "revisions": sorted((r["metadata"]["name"], r["metadata"]["uid"]) for r in revisions),
        "key": sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH],
        "template": sts["spec"]["template"],
        "leader": (leader["metadata"]["uid"], leader["metadata"].get("deletionTimestamp")),
    }


async def _set_budget(api: KubeClient, ns: str, budget: int) -> None:
    """The user edits maxGroupRestarts; returns once the LWS controller has processed the edit and
    the group controller the leader (so that what follows is not a check made too early)."""

    def change(lws: Obj) -> None:
        lws["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = budget

    await kubelet.update_lws(api, ns, NAME, change)
    await processed.expect_lws_processed(api, ns, NAME)
    await processed.expect_pods_processed(api, ns, [f"{NAME}-0"])


async def _expect_nothing_rolled(api: KubeClient, ns: str, before: Obj) -> None:
    async def unchanged() -> bool:
        now = await _template_state(api, ns)
        assert now == before, {k: (before[k], now[k]) for k in now if now[k] != before[k]}
        return True

    await consistently(unchanged)


async def _ledger_actions(api: KubeClient, ns: str) -> list[str]:
    configmap = await api.get_or_none(CONFIGMAPS, ns, ledger_name(NAME))
    entries = [] if configmap is None else json.loads((configmap.get("data") or {}).get("entries") or "[]")
    return [str(entry["action"]) for entry in entries]


async def _expect_ledger(api: KubeClient, ns: str, actions: list[str]) -> None:
    async def check() -> bool:
        got = await _ledger_actions(api, ns)
        assert got == actions, got
        return True

    await eventually(check)


async def raised_budget_restarts_nothing_and_applies_at_the_next_failure(api: KubeClient, ns: str) -> None:
    """maxGroupRestarts 1 → 3 after one recreation: no revision, no restart, the count kept; the
    next failure recreates the group (it would have exhausted it under the old limit)."""
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 1})
    await _group_back_ready(api, ns, 0)
    await expect.expect_available_condition(api, ns)
    before = await _template_state(api, ns)

    await _set_budget(api, ns, 3)
    await _expect_nothing_rolled(api, ns, before)
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 1})
    await _expect_not_degraded(api, ns)

    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 2})
    await _expect_ledger(api, ns, ["recreated", "recreated"])
    await _expect_not_degraded(api, ns)
    assert not await expect.events_with(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED)


async def lowered_budget_exhausts_at_the_next_failure(api: KubeClient, ns: str) -> None:
    """maxGroupRestarts 3 → 1 with two recreations counted: lowering below the count stops nothing
    by itself; the next failure exhausts the group, and the count stays where it was."""
    for _ in range(2):
        await _start_group(api, ns, 0)
        await _fail(api, ns, 0)
        await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
        await _finish_deletion(api, ns, 0)
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 2})
    await _start_group(api, ns, 0)
    await kubelet.set_group_ready(api, ns, f"{NAME}-0")
    await expect.expect_available_condition(api, ns)
    before = await _template_state(api, ns)

    await _set_budget(api, ns, 1)
    await _expect_nothing_rolled(api, ns, before)
    await _expect_not_degraded(api, ns)

    await _fail(api, ns, 0)
    await _expect_exhausted(api, ns, 0)
    await _expect_degraded(api, ns, c.CONDITION_TRUE)
    await _expect_counts(api, ns, lambda key: {f"{key}/0": 2})
    await _expect_ledger(api, ns, ["recreated", "recreated", "budget-exhausted"])


async def unbounded_without_limit(api: KubeClient, ns: str) -> None:
    """No maxGroupRestarts: the legacy behaviour, no counts written."""
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    await _expect_counts(api, ns, lambda _key: {})


@dataclass(frozen=True)
class Case:
    replicas: int
    limit: int | None
    steps: Callable[[KubeClient, str], Awaitable[None]]


CASES = [
    pytest.param(
        Case(1, 1, counted_then_exhausted_then_recovered),
        id="maxGroupRestarts counts a recreation, exhausts at the limit, recover restarts it fresh",
    ),
    pytest.param(
        Case(1, 0, recover_set_before_exhaustion_is_dropped),
        id="a recover annotation set before exhaustion is dropped",
    ),
    pytest.param(Case(1, 0, lws_deletion_releases), id="LWS deletion releases the retained pods"),
    pytest.param(Case(2, 0, scale_down_releases), id="scale-down releases a retained group"),
    pytest.param(Case(1, 2, claim_before_crash_counted_once), id="(ours) a claim recorded before a crash"),
    pytest.param(
        Case(1, 2, count_written_before_crash_not_recounted), id="(ours) a count written before a crash"
    ),
    pytest.param(Case(1, None, unbounded_without_limit), id="no limit: no counts"),
    pytest.param(
        Case(1, 1, raised_budget_restarts_nothing_and_applies_at_the_next_failure),
        id="a raised budget restarts nothing, keeps the count and applies at the next failure",
    ),
    pytest.param(
        Case(1, 3, lowered_budget_exhausts_at_the_next_failure),
        id="a budget lowered below the count exhausts the group at its next failure",
    ),
]


def test_case_count() -> None:
    assert len(CASES) == 9


@pytest.mark.parametrize("case", CASES)
async def test_restart_budget(api: KubeClient, ns: str, case: Case) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(case.replicas).size(3)
    if case.limit is not None:
        builder = builder.max_group_restarts(case.limit)
    await api.create(LEADERWORKERSETS, builder.obj())
    await kubelet.leader_statefulset(api, ns, NAME)
    await case.steps(api, ns)


async def test_a_set_whose_revision_an_earlier_build_keyed_with_the_budget_does_not_roll(
    api: KubeClient, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upgrade safety: our builds before the fix hashed maxGroupRestarts into the revision.
    That build is this one with no live template fields; it creates the set and counts a failure.
    Then the fixed controller takes over and the user raises the budget: the stored revision differs
    from today's patch only by the budget, so it is the same revision: nothing rolls, and the count
    keeps its old key."""
    monkeypatch.setattr(revision, "LIVE_TEMPLATE_FIELDS", ())  # the earlier build
    await api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(1).size(3).max_group_restarts(1).obj()
    )
    sts = await kubelet.leader_statefulset(api, ns, NAME)
    old_key = sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    (stored,) = await expect.expect_revisions(api, ns, 1)
    assert '"maxGroupRestarts":1' in json.dumps(stored["data"], separators=(",", ":"))
    await _start_group(api, ns, 0)
    await _fail(api, ns, 0)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    await _expect_counts(api, ns, lambda _key: {f"{old_key}/0": 1})
    await _group_back_ready(api, ns, 0)
    await expect.expect_available_condition(api, ns)
    before = await _template_state(api, ns)

    monkeypatch.undo()  # the fixed build takes over
    lws = await kubelet.get_lws(api, ns, NAME)
    assert kubelet.current_revision_key(lws) != old_key  # today's patch has other bytes
    await _set_budget(api, ns, 3)
    await _expect_nothing_rolled(api, ns, before)
    await _expect_counts(api, ns, lambda _key: {f"{old_key}/0": 1})

    await _fail(api, ns, 0)  # the new limit applies at once, on the old key
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    await _expect_counts(api, ns, lambda _key: {f"{old_key}/0": 2})
    await _expect_not_degraded(api, ns)
