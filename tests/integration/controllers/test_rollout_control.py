"""Rollout control on the real API server (the test plays the StatefulSet controller and kubelet):
pause holds the partition and resume moves it on, the progress deadline halts a stuck step with
our condition and event, a bad annotation is reported (webhooks are off here), and a set without
our annotations rolls and reports exactly as before."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import format_time
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.integration.controllers.test_rolling_update import NAME, unready, worker_container
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
HOLD = 3.0  # seconds a held partition is watched not moving


async def _start(api: KubeClient, ns: str, replicas: int, **annotations: str) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(replicas)
    if annotations:
        builder = builder.annotations(annotations)
    lws = await api.create(LEADERWORKERSETS, builder.obj())
    await kubelet.create_leader_pods(api, lws, 0, replicas)
    await kubelet.set_groups_ready(api, ns, replicas)
    await expect.expect_available_condition(api, ns)


async def _annotate(api: KubeClient, ns: str, key: str, value: str | None) -> None:
    await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"metadata": {"annotations": {key: value}}})


async def _condition(api: KubeClient, ns: str, condition_type: str) -> Obj | None:
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    conditions = (lws.get("status") or {}).get("conditions") or []
    return next((cond for cond in conditions if cond["type"] == condition_type), None)


async def expect_our_condition(api: KubeClient, ns: str, condition_type: str, status: str) -> Obj:
    async def check() -> Obj:
        cond = await _condition(api, ns, condition_type)
        assert cond is not None, f"no {condition_type} condition"
        assert cond["status"] == status, f"{condition_type}: {cond}"
        return cond

    result: Obj = await eventually(check)
    return result


async def partition_holds(api: KubeClient, ns: str, partition: int) -> None:
    async def holds() -> bool:
        sts = await api.get(STATEFULSETS, ns, NAME)
        got = sts["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
        assert got == partition, f"partition moved to {got} while held at {partition}"
        return True

    await consistently(holds, duration=HOLD, interval=0.2)


async def ready_now(api: KubeClient, ns: str, index: int) -> None:
    """The group on the new revision and ready, its Ready condition stamped now (as a kubelet does)."""
    name = f"{NAME}-{index}"
    await kubelet.set_group_ready(api, ns, name)
    stamped = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": format_time(datetime.datetime.now(datetime.UTC)),
    }
    await api.patch_status(PODS, ns, name, {"status": {"conditions": [stamped]}})


async def test_pause_holds_the_partition_and_resume_moves_it_on(api: KubeClient, ns: str) -> None:
    await _start(api, ns, 4, **{ext.ANNOTATION_ROLLOUT_PAUSED: "true"})
    await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED, c.CONDITION_TRUE)
    await expect.expect_event(api, ns, ext.EVENT_ROLLOUT_PAUSED, f"Rollout of {NAME} paused at partition 0")

    # A new template while paused: frozen behind the partition (every group), no step taken.
    await kubelet.update_lws(api, ns, NAME, worker_container("new-worker"))
    await expect.expect_revisions(api, ns, 2)  # the controller processed the change ...
    await expect.expect_partition(api, ns, 4)  # ... and froze every group
    await partition_holds(api, ns, 4)
    await expect.expect_condition(api, ns, c.CONDITION_UPDATE_IN_PROGRESS, c.CONDITION_TRUE)

    await _annotate(api, ns, ext.ANNOTATION_ROLLOUT_PAUSED, ext.ROLLOUT_PAUSED_FALSE)
    await expect.expect_partition(api, ns, 3)
    await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED, c.CONDITION_FALSE)
    await expect.expect_event(api, ns, ext.EVENT_ROLLOUT_RESUMED, f"Rollout of {NAME} resumed at partition 4")

    # Paused again mid-rollout: group 3 gets ready, yet group 2 is not released.
    await _annotate(api, ns, ext.ANNOTATION_ROLLOUT_PAUSED, ext.ROLLOUT_PAUSED_TRUE)
    await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED, c.CONDITION_TRUE)
    await kubelet.set_group_ready(api, ns, f"{NAME}-3")
    await expect.expect_status_replicas(api, ns, 4, 1)  # processed: group 3 counted as updated
    await partition_holds(api, ns, 3)

    await _annotate(api, ns, ext.ANNOTATION_ROLLOUT_PAUSED, None)  # removed: back to upstream's rules
    await expect.expect_partition(api, ns, 2)
    for index in (2, 1, 0):
        await kubelet.set_group_ready(api, ns, f"{NAME}-{index}")
    await expect.expect_status_replicas(api, ns, 4, 4)
    await expect.expect_available_condition(api, ns)
    assert await _condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED) is None  # not opted in any more


async def test_progress_deadline_halts_a_stuck_step_and_progress_resumes_it(api: KubeClient, ns: str) -> None:
    await _start(api, ns, 3, **{ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "2"})
    await kubelet.update_lws(api, ns, NAME, worker_container("new-worker"))
    await expect.expect_partition(api, ns, 2)  # group 2 released for update ...
    await unready(2)(api, ns)  # ... and it never becomes ready

    halted = await expect_our_condition(
        api, ns, ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, c.CONDITION_TRUE
    )
    assert halted["reason"] == "NotReady"  # the diagnosis of group 2 (its worker StatefulSet)
    assert halted["message"].startswith(
        "no progress for 2s, rollout halted with 1 group(s) not ready; group 2: "
    )
    # The event is recorded after the status write (and sent by the recorder in the background).
    await expect.expect_event(
        api,
        ns,
        ext.EVENT_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
        f"NotReady: {halted['message']}",
        type_="Warning",
    )
    assert len(await expect.events_with(api, ns, ext.EVENT_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED)) == 1

    # Group 2 gets ready on the new revision: progress, so the rollout goes on to the end.
    await ready_now(api, ns, 2)
    await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED, c.CONDITION_FALSE)
    await expect.expect_event(
        api, ns, ext.EVENT_ROLLOUT_PROGRESSING_AGAIN, f"Rollout of {NAME} progresses again at partition 2"
    )
    for index in (1, 0):
        await expect.expect_partition(api, ns, index)
        await ready_now(api, ns, index)
    await expect.expect_status_replicas(api, ns, 3, 3)
    await expect.expect_available_condition(api, ns)


async def test_a_bad_annotation_without_webhooks_is_reported_and_ignored(api: KubeClient, ns: str) -> None:
    await _start(api, ns, 2, **{ext.ANNOTATION_ROLLOUT_PAUSED: "yes"})
    cond = await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_ANNOTATION_INVALID, c.CONDITION_TRUE)
    want = f'annotation {ext.ANNOTATION_ROLLOUT_PAUSED}: \'yes\' is invalid: must be "true" or "false"'
    assert cond["message"] == want
    await expect.expect_event(api, ns, ext.EVENT_ROLLOUT_ANNOTATION_INVALID, want, type_="Warning")
    # Not paused: a template change rolls as usual.
    await kubelet.update_lws(api, ns, NAME, worker_container("new-worker"))
    await expect.expect_partition(api, ns, 1)


async def test_a_set_without_our_annotations_carries_none_of_our_conditions(api: KubeClient, ns: str) -> None:
    await _start(api, ns, 2)
    await kubelet.update_lws(api, ns, NAME, worker_container("new-worker"))
    await expect.expect_partition(api, ns, 1)
    for index in (1, 0):
        await expect.expect_partition(api, ns, index)
        await kubelet.set_group_ready(api, ns, f"{NAME}-{index}")
    await expect.expect_available_condition(api, ns)
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    types = {cond["type"] for cond in lws["status"]["conditions"]}
    assert types == {c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING, c.CONDITION_UPDATE_IN_PROGRESS}
    assert not (lws["metadata"].get("annotations") or {}).keys() & {e.key for e in ext.EXTENSIONS}


async def test_on_a_hash_set_the_annotations_are_reported_not_acted_on(api: KubeClient, ns: str) -> None:
    body = (
        LeaderWorkerSetBuilder(ns)
        .replicas(1)
        .size(2)
        .annotations({ext.ANNOTATION_ROLLOUT_PAUSED: "true"})
        .obj()
    )
    body["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    await api.create(LEADERWORKERSETS, body)
    cond = await expect_our_condition(api, ns, ext.CONDITION_ROLLOUT_ANNOTATION_INVALID, c.CONDITION_TRUE)
    assert cond["message"] == (
        f"annotation {ext.ANNOTATION_ROLLOUT_PAUSED}: 'true' is invalid: only supported with groupIdentity "
        "Ordinal (a Hash set rolls through its Deployment)"
    )
    assert await _condition(api, ns, ext.CONDITION_ROLLOUT_PAUSED) is None
