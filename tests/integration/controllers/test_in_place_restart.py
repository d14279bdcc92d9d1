"""In-place group restart (leaderworkerset.dev/restart-strategy: InPlace) against the real API server.

kwok runs no containers, so the test plays the kubelet (a restart-all is a container status whose
restart count rose with last state `RestartingAllContainers`), the pod webhook (the `restart-agent`
marker it puts on a pod it equipped) and the agents (their pods' restarts once the epoch moved on);
the LWS and pod controllers run in-process. These are the decisions at the API level: which restart
is a failure, the epoch on every pod, the budget and the ledger counting each failure once, and the
fallback to recreation; and the condition that says when this manager cannot honour the annotation
(no agent image, a cluster that does not support RestartAllContainers) until it can."""

from __future__ import annotations

import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.lifecycle.ledger import ledger_name
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONFIGMAPS, LEADERWORKERSETS, PODS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.processed import expect_lws_processed
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
LEADER, FAILED, OTHER = f"{NAME}-0", f"{NAME}-0-1", f"{NAME}-0-2"
Obj = dict[str, Any]


def _in_place_set(ns: str, *, budget: int | None = 5) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns)
        .replicas(1)
        .size(3)
        .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
        .annotation(ext.ANNOTATION_RESTART_STRATEGY, inplacerestart.IN_PLACE)
    )
    if budget is not None:
        builder = builder.max_group_restarts(budget)
    return builder.obj()


async def _start_group(api: KubeClient, ns: str, lws: Obj, *, equipped: bool = True) -> list[str]:
    await api.create(LEADERWORKERSETS, lws)
    await kubelet.leader_statefulset(api, ns, NAME)
    live = await kubelet.get_lws(api, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, live, 0, 1))[0]
    workers = await kubelet.create_worker_pods(api, live, leader)
    names = [p["metadata"]["name"] for p in (leader, *workers)]
    for name in names:
        if equipped:  # what the pod webhook does to a new pod of the set
            patch = {
                "metadata": {"annotations": {ext.ANNOTATION_RESTART_AGENT: inplacerestart.AGENT_CONTAINER}}
            }
            await api.merge_patch(PODS, ns, name, patch)
        await kubelet.set_pod_started_and_ready(api, ns, name)
    return names


async def _restart_all(api: KubeClient, ns: str, name: str) -> None:
    """The kubelet restarted every container of the pod in place (what it reports, whoever triggered it)."""
    await kubelet.crash_container(api, ns, name, exit_code=137, reason="RestartingAllContainers")


async def _annotations(api: KubeClient, ns: str, name: str) -> dict[str, str]:
    return dict((await api.get(PODS, ns, name))["metadata"].get("annotations") or {})


async def _entries(api: KubeClient, ns: str) -> list[Obj]:
    configmap = await api.get_or_none(CONFIGMAPS, ns, ledger_name(NAME))
    return [] if configmap is None else list(json.loads((configmap.get("data") or {}).get("entries") or "[]"))


async def _restart_counts(api: KubeClient, ns: str) -> dict[str, int]:
    raw = (
        (await kubelet.get_lws(api, ns, NAME))["metadata"]
        .get("annotations", {})
        .get(c.ANNOTATION_GROUP_RESTART_COUNTS, "{}")
    )
    return dict(json.loads(raw))


async def _expect_epoch(
    api: KubeClient, ns: str, epoch: int, origin: str
) -> inplacerestart.InPlaceRestartState:
    """Every pod of the group knows the epoch; the others are ordered to restart, the origin is not."""

    async def told() -> inplacerestart.InPlaceRestartState:
        state = inplacerestart.in_place_restart_state(await api.get(PODS, ns, LEADER))
        assert (state.epoch, state.origin) == (epoch, origin), state
        for name in (LEADER, FAILED, OTHER):
            annotations = await _annotations(api, ns, name)
            assert annotations.get(ext.ANNOTATION_RESTART_EPOCH) == f"{epoch} {origin}", (name, annotations)
            ordered = annotations.get(ext.ANNOTATION_RESTART_ORDERED)
            assert ordered == (None if name == origin else str(epoch)), (name, annotations)
        return state

    return await eventually(told)


async def _agents_restart(api: KubeClient, ns: str, origin: str) -> None:
    """The other pods' agents saw the epoch: their pods restart in place; the controller accounts it."""
    for name in (LEADER, FAILED, OTHER):
        if name != origin:
            await _restart_all(api, ns, name)

    async def accounted() -> bool:
        for name in (LEADER, FAILED, OTHER):
            annotations = await _annotations(api, ns, name)
            assert ext.ANNOTATION_RESTART_ORDERED not in annotations, (name, annotations)

        return True

    await eventually(accounted)


async def test_a_worker_failure_restarts_its_group_in_place_counted_once(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    uids = {}
    for name in await _start_group(api, ns, _in_place_set(ns)):
        uids[name] = (await api.get(PODS, ns, name))["metadata"]["uid"]
    await _restart_all(api, ns, FAILED)

    state = await _expect_epoch(api, ns, 1, FAILED)
    assert state.streak == 1
    assert state.count == 1
    (entry,) = await eventually(lambda: _one_entry(api, ns))
    assert {k: entry[k] for k in ("group", "action", "pod")} == {
        "group": "0", "action": "restarted-in-place", "pod": FAILED,
    }  # fmt: skip
    assert list((await _restart_counts(api, ns)).values()) == [1]
    await expect.expect_event(
        api, ns, ext.EVENT_GROUP_RESTARTED_IN_PLACE,
        f"Pod {FAILED} restarted: restarting every container of group 0 in place (epoch 1, 1 in a row)",
    )  # fmt: skip

    # The restart breaks the group's connections: the failed worker exits again before the others are
    # done. Part of the restart in progress: absorbed, not a new failure.
    await _restart_all(api, ns, FAILED)

    async def absorbed() -> bool:
        state = inplacerestart.in_place_restart_state(await api.get(PODS, ns, LEADER))
        assert (state.epoch, state.absorbed, state.settled) == (1, 1, False), state
        assert (await _annotations(api, ns, FAILED)).get(ext.ANNOTATION_RESTARTS_SEEN) == "2"
        return True

    await eventually(absorbed)
    await _agents_restart(api, ns, FAILED)

    async def settled() -> bool:
        return inplacerestart.in_place_restart_state(await api.get(PODS, ns, LEADER)).settled

    await eventually(settled)  # every pod Ready again, every restart accounted

    async def nothing_more() -> bool:
        assert len(await _entries(api, ns)) == 1
        assert list((await _restart_counts(api, ns)).values()) == [1]
        assert inplacerestart.in_place_restart_state(await api.get(PODS, ns, LEADER)).epoch == 1
        for name, uid in uids.items():
            pod = await api.get(PODS, ns, name)
            assert pod["metadata"]["uid"] == uid
            assert "deletionTimestamp" not in pod["metadata"]
        return True

    await consistently(nothing_more)  # the restarts the controller ordered are not failures


async def _expect_warning(api: KubeClient, ns: str, reason: str, part: str) -> None:
    async def seen() -> bool:
        notes = [e.get("note") or "" for e in await expect.events_with(api, ns, reason)]
        assert any(part in note for note in notes), notes

        return True

    await eventually(seen)


async def _one_entry(api: KubeClient, ns: str) -> list[Obj]:
    entries = await _entries(api, ns)
    assert len(entries) == 1, entries
    return entries


async def test_a_group_that_keeps_failing_in_place_is_recreated_after_the_bound(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _start_group(api, ns, _in_place_set(ns))
    for epoch in range(1, inplacerestart.FALLBACK_AFTER + 1):
        origin = FAILED if epoch % 2 else OTHER
        await _restart_all(api, ns, origin)
        await _expect_epoch(api, ns, epoch, origin)
        await _agents_restart(api, ns, origin)
    await expect.expect_pod_not_deleting(api, ns, LEADER)

    await _restart_all(api, ns, FAILED)  # one failure too many
    await expect.expect_pod_deleting(api, ns, LEADER)
    await _expect_warning(api, ns, ext.EVENT_IN_PLACE_RESTART_FALLBACK, "3 in-place restarts in a row")
    entries = await eventually(lambda: _n_entries(api, ns, inplacerestart.FALLBACK_AFTER + 1))
    assert [e["action"] for e in entries] == ["restarted-in-place"] * inplacerestart.FALLBACK_AFTER + [
        "recreated"
    ]
    # Every failure charged the budget once, the in-place ones and the recreation.
    assert list((await _restart_counts(api, ns)).values()) == [inplacerestart.FALLBACK_AFTER + 1]


async def _n_entries(api: KubeClient, ns: str, count: int) -> list[Obj]:
    entries = await _entries(api, ns)
    assert len(entries) == count, entries
    return entries


async def test_a_spent_budget_stops_the_group_as_without_the_annotation(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _start_group(api, ns, _in_place_set(ns, budget=1))
    await _restart_all(api, ns, FAILED)
    await _expect_epoch(api, ns, 1, FAILED)
    await _agents_restart(api, ns, FAILED)

    await _restart_all(api, ns, OTHER)
    entries = await eventually(lambda: _n_entries(api, ns, 2))
    assert [e["action"] for e in entries] == ["restarted-in-place", "budget-exhausted"]

    async def exhausted() -> bool:
        leader = await api.get(PODS, ns, LEADER)
        assert (
            leader["metadata"].get("annotations", {}).get(c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED)
            == "true"
        )

        return True

    await eventually(exhausted)


async def test_a_group_admitted_without_the_agent_is_recreated_and_says_why(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _start_group(api, ns, _in_place_set(ns), equipped=False)
    await _restart_all(api, ns, FAILED)
    await expect.expect_pod_deleting(api, ns, LEADER)
    await _expect_warning(api, ns, ext.EVENT_IN_PLACE_RESTART_FALLBACK, "have no restart agent")


async def test_a_deleted_worker_recreates_the_group(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _start_group(api, ns, _in_place_set(ns))
    await api.delete(PODS, ns, OTHER)
    await expect.expect_pod_deleting(api, ns, LEADER)
    entries = await eventually(lambda: _n_entries(api, ns, 1))
    assert entries[0]["action"] == "recreated"


async def test_a_bad_value_with_the_webhooks_off_is_flagged_and_groups_are_recreated(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    lws = _in_place_set(ns)
    lws["metadata"]["annotations"][ext.ANNOTATION_RESTART_STRATEGY] = "inplace"
    await _start_group(api, ns, lws)
    await expect.expect_condition(api, ns, ext.CONDITION_RESTART_STRATEGY_INVALID, "True")
    await _expect_warning(api, ns, ext.EVENT_INVALID_RESTART_STRATEGY, "must be 'InPlace'")
    await _restart_all(api, ns, FAILED)
    await expect.expect_pod_deleting(api, ns, LEADER)


async def test_a_claim_left_by_a_killed_controller_is_finished_not_counted_again(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _start_group(api, ns, _in_place_set(ns))
    failed = await api.get(PODS, ns, FAILED)
    # What a controller killed right after its claim leaves: the leader names this very failure (the
    # pod's first restart) with its budget count, and nothing else was written.
    claim = inplacerestart.InPlaceRestartState(
        epoch=1, streak=1, last=1.0, failure=f"{failed['metadata']['uid']}/1", origin=FAILED, count=1
    )
    leader = await api.get(PODS, ns, LEADER)
    await api.merge_patch(PODS, ns, LEADER, inplacerestart.state_patch(leader, claim))
    await _restart_all(api, ns, FAILED)

    state = await _expect_epoch(api, ns, 1, FAILED)
    assert state == claim  # finished under the claim: no second epoch
    await eventually(lambda: _one_entry(api, ns))
    assert list((await _restart_counts(api, ns)).values()) == [1]


async def _unavailable(api: KubeClient, ns: str) -> Obj | None:
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    conditions = (lws.get("status") or {}).get("conditions") or []
    return next((c_ for c_ in conditions if c_["type"] == ext.CONDITION_IN_PLACE_RESTART_UNAVAILABLE), None)


async def test_what_stands_in_the_way_of_in_place_restarts_is_a_condition_until_resolved(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    support = lws_controllers.restart_support
    assert support is not None
    await api.create(LEADERWORKERSETS, _in_place_set(ns))
    await expect_lws_processed(api, ns, NAME)
    assert await _unavailable(api, ns) is None  # everything it needs is there
    image, unsupported = support.agent_image, support.unsupported
    try:
        support.agent_image = None  # a manager without LWS_RESTART_AGENT_IMAGE
        support.changed()  # (the CLI calls it when the probe's answer moves; the image needs a restart)

        async def reason_is(reason: str) -> bool:
            condition = await _unavailable(api, ns)
            assert condition is not None
            assert condition["reason"] == reason, condition
            assert condition["status"] == c.CONDITION_TRUE
            return True

        await eventually(lambda: reason_is(ext.REASON_NO_RESTART_AGENT_IMAGE))
        await _expect_warning(api, ns, ext.EVENT_IN_PLACE_RESTART_UNAVAILABLE, ext.ENV_RESTART_AGENT_IMAGE)

        support.agent_image = image
        support.unsupported = lambda: "the API server drops container restart rules"
        support.changed()
        await eventually(lambda: reason_is(ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED))
        condition = await _unavailable(api, ns)
        assert condition is not None
        assert (
            "the API server drops container restart rules; failed groups are recreated"
            in condition["message"]
        )
    finally:
        support.agent_image, support.unsupported = image, unsupported
        support.changed()

    async def cleared() -> bool:
        assert await _unavailable(api, ns) is None
        return True

    await eventually(cleared)
