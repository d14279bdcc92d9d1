"""Opt-in GroupNotReady events against the real API server (core/observe/notready.py, docs/status.md). The
test plays the StatefulSet controller and the kubelet; the LWS and pod controllers run in-process
with the webhooks off, so a bad annotation value reaches the controller."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]
Obj = dict[str, Any]
LOUD, QUIET = "loud", "quiet"


def _lws(ns: str, name: str, annotation: str | None) -> Obj:
    # restartPolicy None: a crash-looping container stays a crash loop, the group is not recreated.
    builder = LeaderWorkerSetBuilder(ns, name).replicas(1).size(2).restart_policy(c.RESTART_POLICY_NONE)
    if annotation is not None:
        builder.annotations({ext.ANNOTATION_NOT_READY_EVENTS: annotation})
    return builder.obj()


async def _start_group(api: KubeClient, ns: str, name: str) -> tuple[Obj, Obj]:
    await kubelet.leader_statefulset(api, ns, name)
    lws = await kubelet.get_lws(api, ns, name)
    leader = (await kubelet.create_leader_pods(api, lws, 0, 1))[0]
    # Controlled by the worker StatefulSet, as the StatefulSet controller makes them: only such
    # workers count towards a ready group (core/groups/state.py, whole-group readiness).
    sts = await kubelet.worker_statefulset(api, ns, leader["metadata"]["name"])
    owner = kubelet.owner_reference(sts, "apps/v1", "StatefulSet")
    (worker,) = await kubelet.create_worker_pods(api, lws, leader, owner=owner)
    return leader, worker


def _notes(events: list[Obj], name: str) -> list[str]:
    return [str(e.get("note")) for e in events if (e.get("regarding") or {}).get("name") == name]


async def test_a_group_that_runs_into_a_problem_is_said_once_and_so_is_its_recovery(
    api: KubeClient, ns: str
) -> None:
    await api.create(LEADERWORKERSETS, _lws(ns, QUIET, None))
    await api.create(LEADERWORKERSETS, _lws(ns, LOUD, ext.NOT_READY_EVENTS_TRUE))
    _, quiet_worker = await _start_group(api, ns, QUIET)
    leader, worker = await _start_group(api, ns, LOUD)

    # The set without the annotation crash-loops first: the loud one's event is the barrier.
    await kubelet.crash_loop(api, ns, quiet_worker["metadata"]["name"], exit_code=3, restarts=2)
    await kubelet.crash_loop(api, ns, worker["metadata"]["name"], exit_code=3, restarts=2)
    # The kubelet reports the pod's own containers, by name and image, as the event names them.
    reported = (await api.get(PODS, ns, worker["metadata"]["name"]))["status"]["containerStatuses"]
    containers = worker["spec"]["containers"]
    assert [(s["name"], s["image"]) for s in reported] == [(x["name"], x["image"]) for x in containers]
    container = containers[0]["name"]
    crash = "CrashLoopBackOff (exit code 3, 2 restarts)"
    said = f"group 0 not ready: worker {LOUD}-0-1 container {container} {crash}"
    await expect.expect_event(api, ns, ext.EVENT_GROUP_NOT_READY, said, "Warning")

    # Ready again: containers and the worker StatefulSet (the StatefulSet controller's part).
    for pod in (leader, worker):
        await kubelet.set_pod_started_and_ready(api, ns, pod["metadata"]["name"])
    await kubelet.set_statefulset_ready(api, ns, f"{LOUD}-0")
    ready = f"group 0 is ready (it was: {said.removeprefix('group 0 not ready: ')})"
    await expect.expect_event(api, ns, ext.EVENT_GROUP_READY, ready)

    not_ready = await expect.events_with(api, ns, ext.EVENT_GROUP_NOT_READY)
    assert _notes(not_ready, LOUD) == [said]  # said once, however often the group was reconciled
    assert [e.get("series") for e in not_ready] == [None]
    assert _notes(await expect.events_with(api, ns, ext.EVENT_GROUP_READY), LOUD) == [ready]
    # The set that did not opt in was told nothing.
    assert _notes(not_ready, QUIET) == []


async def test_an_unusable_value_is_reported_in_a_condition_until_it_is_fixed(
    api: KubeClient, ns: str
) -> None:
    await api.create(LEADERWORKERSETS, _lws(ns, LOUD, "yes"))
    message = (
        f'annotation {ext.ANNOTATION_NOT_READY_EVENTS}: \'yes\' is invalid: must be "true" or "false"; '
        "no GroupNotReady events are recorded"
    )

    async def condition() -> Obj | None:
        lws = await kubelet.get_lws(api, ns, LOUD)
        conditions = (lws.get("status") or {}).get("conditions") or []
        return next((x for x in conditions if x["type"] == ext.CONDITION_NOT_READY_EVENTS_INVALID), None)

    async def flagged() -> Obj:
        found = await condition()
        assert found is not None, "no condition yet"
        return found

    found = await eventually(flagged)
    assert (found["status"], found["reason"], found["message"]) == (
        c.CONDITION_TRUE,
        ext.REASON_INVALID_ANNOTATION,
        message,
    )
    await expect.expect_event(api, ns, ext.EVENT_INVALID_NOT_READY_EVENTS, message, "Warning")

    patch = {"metadata": {"annotations": {ext.ANNOTATION_NOT_READY_EVENTS: ext.NOT_READY_EVENTS_TRUE}}}
    await api.merge_patch(LEADERWORKERSETS, ns, LOUD, patch)

    async def cleared() -> bool:
        assert await condition() is None, "condition still set"
        return True

    await eventually(cleared)
