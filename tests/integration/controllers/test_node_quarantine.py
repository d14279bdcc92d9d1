"""Node quarantine's bookkeeping against the real API server: the test plays the StatefulSet
controller, the scheduler, the garbage collector and the kubelet; the LWS and pod controllers run
in-process (webhooks off, so a bad annotation reaches the controller).

A set whose group keeps failing on one node gets that node in its `quarantined-nodes` annotation,
with the evidence, before the failed group's leader is deleted; the event says why; the gauge counts
it; the other group and the set's spec are not touched; after the cool-down the node is released."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.group.ledger import FailureLedger
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.core.lifecycle.ledger import Action, Cause, Trigger, entry_for
from leaderworkerset.core.quarantine.policy import quarantine_opted_in
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS, STATEFULSETS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder, NodeBuilder
from tests.support.objects import uid
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
POOL_LABEL = "quarantine-test"
# The window (and cool-down): long enough for the two failures of the test, and to observe the
# quarantine; short enough to wait out in a test.
WINDOW_SECONDS = 15
Obj = dict[str, Any]


def _quarantined(lws: Obj) -> list[Obj]:
    return list(
        json.loads((lws["metadata"].get("annotations") or {}).get(ext.ANNOTATION_QUARANTINED_NODES) or "[]")
    )


async def _nodes(api: KubeClient, ns: str, count: int) -> list[str]:
    """`count` nodes of this test only (a pool label the set's nodeSelector asks for)."""
    names = [f"q-{ns[-6:]}-{i}" for i in range(count)]
    for name in names:
        await api.create(NODES, NodeBuilder(name).label(POOL_LABEL, ns).obj())
    return names


async def _start_group(api: KubeClient, ns: str, group: int, node: str) -> list[Obj]:
    lws = await kubelet.get_lws(api, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, lws, group, group + 1, node_name=node))[0]
    return [leader, *await kubelet.create_worker_pods(api, lws, leader, node_name=node)]


def _gauge(registered: RegisteredControllers, ns: str) -> float | None:
    assert registered.registry is not None
    return registered.registry.get_sample_value("lws_quarantined_nodes", {"namespace": ns, "lws": NAME})


async def test_a_node_that_keeps_failing_a_group_is_quarantined_then_released(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    bad, good, spare = await _nodes(api, ns, 3)
    try:
        builder = (
            LeaderWorkerSetBuilder(ns)
            .replicas(2)
            .size(2)
            .annotation(ext.ANNOTATION_QUARANTINE_AFTER, f"2/{WINDOW_SECONDS}s")
        )
        obj = builder.node_selector({POOL_LABEL: ns}).obj()
        await api.create(LEADERWORKERSETS, obj)
        sts = await kubelet.leader_statefulset(api, ns, NAME)
        generation = (await kubelet.get_lws(api, ns, NAME))["metadata"]["generation"]
        other = {uid(p) for p in await _start_group(api, ns, 1, good)}

        # The first failure on `bad`: recorded, below the threshold.
        await _start_group(api, ns, 0, bad)
        await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
        await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
        assert _quarantined(await kubelet.get_lws(api, ns, NAME)) == []

        async def observed_at_zero() -> bool:
            return _gauge(lws_controllers, ns) == 0.0

        await eventually(observed_at_zero)

        # The recreated group lands on `bad` again and fails again: quarantined, before the delete.
        await kubelet.finish_group_deletion(api, ns, 0, NAME)
        await _start_group(api, ns, 0, bad)
        await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
        await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
        lws = await kubelet.get_lws(api, ns, NAME)
        (held,) = _quarantined(lws)
        assert held["node"] == bad
        assert [(f["group"], f["pod"], f["cause"]) for f in held["failures"]] == [
            ("0", f"{NAME}-0-1", "exit-code"),
            ("0", f"{NAME}-0-1", "exit-code"),
        ]
        (event,) = await expect.events_with(api, ns, ext.EVENT_NODE_QUARANTINED)
        assert event["type"] == "Warning"
        assert event["note"].startswith(
            f"Node {bad} quarantined until {held['until']}: 2 failures within {WINDOW_SECONDS}s"
        )

        async def counted() -> bool:
            return _gauge(lws_controllers, ns) == 1.0

        await eventually(counted)
        # Nothing else moved: the spec, the leader StatefulSet's template, the other group's pods.
        assert lws["metadata"]["generation"] == generation
        assert (await api.get(STATEFULSETS, ns, NAME))["spec"]["template"] == sts["spec"]["template"]
        assert {uid(p) for p in await api.list(PODS, ns, f"{c.LABEL_GROUP_INDEX}=1")} == other

        # After the cool-down: released, announced, counted.
        async def released() -> bool:
            assert _quarantined(await kubelet.get_lws(api, ns, NAME)) == []
            return True

        await eventually(released)
        await expect.expect_event(
            api,
            ns,
            ext.EVENT_NODE_RELEASED,
            f"Node {bad} released: its quarantine since {held['since']} ended at {held['until']}",
        )
        await eventually(observed_at_zero)
        assert spare  # the third node only widens the pool: a third of three nodes may go
    finally:
        for node in (bad, good, spare):
            await api.delete(NODES, None, node)


async def test_a_set_that_drops_the_annotation_releases_its_nodes_at_once(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    bad, spare = await _nodes(api, ns, 2)
    try:
        builder = (
            LeaderWorkerSetBuilder(ns).replicas(1).size(2).annotation(ext.ANNOTATION_QUARANTINE_AFTER, "1/1h")
        )
        obj = builder.node_selector({POOL_LABEL: ns}).obj()
        await api.create(LEADERWORKERSETS, obj)
        await kubelet.leader_statefulset(api, ns, NAME)
        await _start_group(api, ns, 0, bad)
        await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
        await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
        (held,) = _quarantined(await kubelet.get_lws(api, ns, NAME))
        assert held["node"] == bad

        await kubelet.update_lws(
            api, ns, NAME, lambda lws: lws["metadata"]["annotations"].pop(ext.ANNOTATION_QUARANTINE_AFTER)
        )
        await expect.expect_event(
            api,
            ns,
            ext.EVENT_NODE_RELEASED,
            f"Node {bad} released: the set no longer asks for a quarantine (since {held['since']})",
        )
        assert _quarantined(await kubelet.get_lws(api, ns, NAME)) == []

        async def series_gone() -> bool:
            return _gauge(lws_controllers, ns) is None

        await eventually(series_gone)
        assert spare  # two nodes: one may be quarantined
    finally:
        for node in (bad, spare):
            await api.delete(NODES, None, node)


async def test_a_disabled_ledger_still_keeps_the_failures_a_quarantine_counts(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    builder = (
        LeaderWorkerSetBuilder(ns).replicas(1).size(2).annotation(ext.ANNOTATION_QUARANTINE_AFTER, "3/10m")
    )
    lws = await api.create(LEADERWORKERSETS, builder.obj())
    trigger = Trigger(Cause.EXIT_CODE, f"{NAME}-0-1", "worker", 1, "some-node")
    entry = entry_for(trigger, group="0", action=Action.RECREATED, when=datetime.datetime.now(datetime.UTC))
    ledger = FailureLedger(api, enabled=False)
    assert await ledger.record(lws, entry=entry, group="0", keep=quarantine_opted_in(lws))
    assert [e.trigger.node for e in (await ledger.read(lws)).entries] == ["some-node"]


async def test_a_bad_value_admitted_with_webhooks_off_is_reported_and_quarantines_nothing(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(1).size(2).annotation(ext.ANNOTATION_QUARANTINE_AFTER, "1")
    await api.create(LEADERWORKERSETS, builder.obj())
    message = (
        f"annotation {ext.ANNOTATION_QUARANTINE_AFTER}: '1' is invalid: "
        "must be <failures>/<window>, e.g. 3/10m; no node is quarantined"
    )
    await expect.expect_condition(
        api, ns, ext.CONDITION_QUARANTINE_ANNOTATION_INVALID, c.CONDITION_TRUE, message
    )
    await expect.expect_event(api, ns, ext.EVENT_INVALID_QUARANTINE, message, "Warning")
    await kubelet.leader_statefulset(api, ns, NAME)
    await _start_group(api, ns, 0, "")
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")

    async def nothing_quarantined() -> bool:
        return _quarantined(await kubelet.get_lws(api, ns, NAME)) == []

    await consistently(nothing_quarantined)
    await kubelet.update_lws(
        api,
        ns,
        NAME,
        lambda lws: lws["metadata"]["annotations"].update({ext.ANNOTATION_QUARANTINE_AFTER: "3/10m"}),
    )

    async def cleared() -> bool:
        lws = await kubelet.get_lws(api, ns, NAME)
        types = [cond["type"] for cond in (lws.get("status") or {}).get("conditions") or []]
        assert ext.CONDITION_QUARANTINE_ANNOTATION_INVALID not in types, types
        return True

    await eventually(cleared)
