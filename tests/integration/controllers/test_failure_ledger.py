"""The failure ledger, the restart back-off and the group metrics against the real API server: the
test plays the StatefulSet controller, the garbage collector and the kubelet; the LWS and pod
controllers run in-process (webhooks off, so a bad annotation reaches the controller)."""

from __future__ import annotations

import asyncio
import datetime
import json
import re
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.group.ledger import FailureLedger
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.core.lifecycle.ledger import Action, Cause, Trigger, entry_for, ledger_name
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONFIGMAPS, CORE_EVENTS, LEADERWORKERSETS, NODES, PODS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder, NodeBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
LEDGER = ledger_name(NAME)
# The back-off base: long enough that the test's group is back and failing well inside it.
BASE = 8.0
Obj = dict[str, Any]


async def _create(api: KubeClient, lws: Obj) -> Obj:
    created: Obj = await api.create(LEADERWORKERSETS, lws)
    await kubelet.leader_statefulset(api, created["metadata"]["namespace"], NAME)
    return created


async def _start_group(api: KubeClient, ns: str, *, ready: bool = False) -> None:
    lws = await kubelet.get_lws(api, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, lws, 0, 1))[0]
    workers = await kubelet.create_worker_pods(api, lws, leader)
    if ready:
        for pod in (leader, *workers):
            await kubelet.set_pod_started_and_ready(api, ns, pod["metadata"]["name"])


async def _finish_deletion(api: KubeClient, ns: str) -> None:
    await kubelet.finish_group_deletion(api, ns, 0, NAME)


async def _configmap(api: KubeClient, ns: str) -> Obj | None:
    return await api.get_or_none(CONFIGMAPS, ns, LEDGER)


async def _entries(api: KubeClient, ns: str) -> list[Obj]:
    configmap = await _configmap(api, ns)
    return [] if configmap is None else list(json.loads((configmap.get("data") or {}).get("entries") or "[]"))


async def _expect_entries(api: KubeClient, ns: str, count: int) -> list[Obj]:
    async def check() -> list[Obj]:
        entries = await _entries(api, ns)
        assert len(entries) == count, entries
        return entries

    return await eventually(check)


def _sample(registered: RegisteredControllers, name: str, labels: dict[str, str]) -> float | None:
    assert registered.registry is not None
    return registered.registry.get_sample_value(name, labels)


async def test_an_lws_that_never_recreates_a_group_gets_no_ledger_and_its_time_to_ready_is_observed(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    await _start_group(api, ns, ready=True)
    labels = {"namespace": ns, "lws": NAME, "phase": "total"}

    async def observed() -> bool:
        return _sample(lws_controllers, "lws_group_time_to_ready_seconds_count", labels) == 1.0

    await eventually(observed)  # the positive sign: the pod controller saw the ready group
    for phase in ("scheduled", "containers-started", "ready"):
        assert (
            _sample(lws_controllers, "lws_group_time_to_ready_seconds_count", {**labels, "phase": phase})
            == 1.0
        )

    async def no_ledger() -> bool:
        return await _configmap(api, ns) is None

    await consistently(no_ledger)
    await consistently(observed)  # once per incarnation, however often its pods are reconciled


async def test_a_recreation_is_recorded_with_its_cause_and_counted(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=3)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")

    (entry,) = await _expect_entries(api, ns, 1)
    assert {k: entry[k] for k in ("group", "action", "cause", "exitCode", "pod", "container")} == {
        "group": "0",
        "action": "recreated",
        "cause": "exit-code",
        "exitCode": 3,
        "pod": f"{NAME}-0-1",
        "container": "worker",
    }
    lws = await kubelet.get_lws(api, ns, NAME)
    configmap = await _configmap(api, ns)
    assert configmap is not None
    (owner,) = configmap["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "LeaderWorkerSet",
        lws["metadata"]["uid"],
        True,
    )
    assert configmap["metadata"]["labels"][c.LABEL_SET_NAME] == NAME
    assert ext.ANNOTATION_RESTART_BACKOFF not in (lws["metadata"].get("annotations") or {})

    async def counted() -> bool:
        labels = {"namespace": ns, "lws": NAME, "cause": "exit-code"}
        return _sample(lws_controllers, "lws_group_recreations_total", labels) == 1.0

    await eventually(counted)
    await consistently(counted)


async def test_every_pod_of_a_group_failing_at_once_recreates_it_once_with_one_entry(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    """A multi-host runtime (JAX over gloo, a Ray cluster) loses every process when one dies: all the
    group's containers restart within a second, and their pods are reconciled side by side. One
    failure, one recreation: one ledger entry, one RecreateGroup event, counted once."""
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(3).obj())
    await _start_group(api, ns, ready=True)
    pods = [f"{NAME}-0", f"{NAME}-0-1", f"{NAME}-0-2"]
    await asyncio.gather(*(kubelet.crash_container(api, ns, pod, exit_code=1) for pod in pods))
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")

    def recreations() -> float:
        labels = {"namespace": ns, "lws": NAME, "cause": "exit-code"}
        return _sample(lws_controllers, "lws_group_recreations_total", labels) or 0.0

    await eventually(recreations)  # the positive sign: a recreation went through

    async def once() -> bool:
        entries = await _entries(api, ns)
        assert [(e["group"], e["action"]) for e in entries] == [("0", "recreated")], entries
        assert entries[0]["pod"] in pods
        assert len(await expect.events_with(api, ns, c.EVENT_RECREATE_GROUP)) == 1
        assert recreations() == 1.0
        return True

    await consistently(once)


async def test_a_second_failure_backs_off_then_recreates_and_both_waits_are_in_the_ledger(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(1).size(2).max_group_restarts(5)
    await _create(
        api, builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, f"base={BASE:g}s,cap={2 * BASE:g}s").obj()
    )
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")  # the first recreation is immediate
    await _finish_deletion(api, ns)

    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    first, waiting = await _expect_entries(api, ns, 2)
    assert (first["action"], waiting["action"], waiting["delaySeconds"]) == ("recreated", "backing-off", BASE)
    # The countdown depends on how long the group took to fail again; the rest is fixed.
    note = re.compile(
        rf"Backing off recreation 2 in a row of group 0: next recreation in \d+s \(delay {BASE:g}s\)"
    )

    async def backoff_event() -> bool:
        notes = [e.get("note") for e in await expect.events_with(api, ns, ext.EVENT_GROUP_RESTART_BACKOFF)]
        assert [n for n in notes if n and note.fullmatch(n)], notes
        return True

    await eventually(backoff_event)
    counts_before = (
        (await kubelet.get_lws(api, ns, NAME))["metadata"]
        .get("annotations", {})
        .get(c.ANNOTATION_GROUP_RESTART_COUNTS)
    )

    async def waiting_leader() -> bool:
        pod = await api.get(PODS, ns, f"{NAME}-0")
        return pod["metadata"].get("deletionTimestamp") is None

    await consistently(waiting_leader, duration=1.5)
    # A waiting recreation is not charged to maxGroupRestarts.
    lws = await kubelet.get_lws(api, ns, NAME)
    assert lws["metadata"].get("annotations", {}).get(c.ANNOTATION_GROUP_RESTART_COUNTS) == counts_before

    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
    _, _, recreated = await _expect_entries(api, ns, 3)
    assert (recreated["action"], recreated["delaySeconds"]) == ("recreated", BASE)
    elapsed = _seconds(recreated["time"]) - _seconds(first["time"])
    assert elapsed >= BASE, f"recreated {elapsed}s after the first recreation, before the {BASE}s delay"

    async def charged_twice() -> bool:
        lws = await kubelet.get_lws(api, ns, NAME)
        raw = lws["metadata"].get("annotations", {}).get(c.ANNOTATION_GROUP_RESTART_COUNTS)
        return raw is not None and list(json.loads(raw).values()) == [2]

    await eventually(charged_twice)


def _seconds(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def test_a_bad_backoff_admitted_without_webhooks_gets_a_condition_and_an_event_and_recreates_at_once(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(1).size(2)
    await _create(api, builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, "base=0s").obj())
    rule = "base-positive): base must be greater than 0, got 0s"
    message = f"annotation {ext.ANNOTATION_RESTART_BACKOFF} ignored ({rule}"
    await expect.expect_condition(api, ns, ext.CONDITION_RESTART_BACKOFF_INVALID, c.CONDITION_TRUE, message)
    await expect.expect_event(api, ns, ext.EVENT_INVALID_RESTART_BACKOFF, message, "Warning")
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")

    await kubelet.update_lws(
        api,
        ns,
        NAME,
        lambda lws: lws["metadata"]["annotations"].update({ext.ANNOTATION_RESTART_BACKOFF: "base=1s"}),
    )
    await expect.expect_no_condition(api, ns, ext.CONDITION_RESTART_BACKOFF_INVALID)


async def test_a_configmap_of_that_name_not_owned_by_the_lws_is_left_alone(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    theirs = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": LEDGER, "namespace": ns},
        "data": {"k": "v"},
    }
    await api.create(CONFIGMAPS, theirs)
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    await _start_group(api, ns)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
    await expect.expect_pod_deleting(api, ns, f"{NAME}-0")  # the recreation is not blocked
    configmap = await _configmap(api, ns)
    assert configmap is not None
    assert configmap["data"] == {"k": "v"}


async def test_a_disabled_ledger_writes_no_history(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    lws = await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    trigger = Trigger(Cause.DELETION, f"{NAME}-0-1")
    entry = entry_for(trigger, group="0", action=Action.RECREATED, when=datetime.datetime.now(datetime.UTC))
    assert not await FailureLedger(api, enabled=False).record(lws, entry=entry, group="0")
    assert await _configmap(api, ns) is None, "a disabled ledger created its ConfigMap"
    assert await FailureLedger(api).record(lws, entry=entry, group="0")
    assert len(await _entries(api, ns)) == 1


async def test_without_the_annotation_every_failure_recreates_at_once_as_upstream(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    for _ in range(2):
        await _start_group(api, ns)
        await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=1)
        await expect.expect_pod_deleting(api, ns, f"{NAME}-0")
        await _finish_deletion(api, ns)
    entries = await _expect_entries(api, ns, 2)
    assert [(e["action"], e.get("delaySeconds")) for e in entries] == [
        ("recreated", None),
        ("recreated", None),
    ]
    configmap = await _configmap(api, ns)
    assert configmap is not None
    assert "backoff" not in configmap["data"], "back-off state kept for an LWS that did not ask"
    assert await expect.events_with(api, ns, ext.EVENT_GROUP_RESTART_BACKOFF) == []

    async def two_recreate_events() -> bool:
        events = await expect.events_with(api, ns, c.EVENT_RECREATE_GROUP)
        return sum(int((e.get("series") or {}).get("count") or 1) for e in events) == 2

    await eventually(two_recreate_events)


async def test_a_liveness_probe_kill_is_told_from_a_crash_by_the_kubelets_unhealthy_event(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    """The field-selected LIST of the pod's Unhealthy events, on the real API server."""
    await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
    await _start_group(api, ns)
    worker = await api.get(PODS, ns, f"{NAME}-0-1")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{NAME}-0-1.unhealthy", "namespace": ns},
        "involvedObject": {
            "kind": "Pod", "namespace": ns, "name": f"{NAME}-0-1", "uid": worker["metadata"]["uid"],
            "fieldPath": "spec.containers{worker}",
        },
        "reason": "Unhealthy",
        "message": "Liveness probe failed: HTTP probe failed with statuscode: 500",
        "type": "Warning",
        "source": {"component": "kubelet"},
    }  # fmt: skip
    await api.create(CORE_EVENTS, event)
    await kubelet.crash_container(api, ns, f"{NAME}-0-1", exit_code=137)
    (entry,) = await _expect_entries(api, ns, 1)
    assert (entry["cause"], entry["exitCode"], entry["container"]) == ("probe-failure", 137, "worker")


async def test_a_pod_deleted_on_a_not_ready_node_is_recorded_as_node_not_ready(
    api: KubeClient, ns: str, lws_controllers: RegisteredControllers
) -> None:
    node = f"ledger-node-{ns[-6:]}"
    await api.create(NODES, NodeBuilder(node).obj())
    try:
        not_ready = {
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]}
        }
        await api.patch_status(NODES, None, node, not_ready)
        await _create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(2).obj())
        lws = await kubelet.get_lws(api, ns, NAME)
        leader = (await kubelet.create_leader_pods(api, lws, 0, 1, node_name=node))[0]
        await kubelet.create_worker_pods(api, lws, leader, node_name=node)
        await api.delete(PODS, ns, f"{NAME}-0-1")  # bound: graceful, it stays terminating
        (entry,) = await _expect_entries(api, ns, 1)
        assert (entry["cause"], entry["node"], entry["pod"]) == ("node-not-ready", node, f"{NAME}-0-1")
    finally:
        await api.delete(NODES, None, node)


class _CountingClient:
    """The real client, counting the ledger's calls by method (the ledger uses only these three)."""

    def __init__(self, api: KubeClient) -> None:
        self.api = api
        self.calls: dict[str, int] = {"get_or_none": 0, "create": 0, "update": 0}

    async def get_or_none(self, *args: Any) -> Any:
        self.calls["get_or_none"] += 1
        return await self.api.get_or_none(*args)

    async def create(self, *args: Any) -> Any:
        self.calls["create"] += 1
        return await self.api.create(*args)

    async def update(self, *args: Any) -> Any:
        self.calls["update"] += 1
        return await self.api.update(*args)


async def test_records_made_while_a_write_is_in_flight_share_the_next_write_and_reads_are_our_writes(
    api: KubeClient, ns: str
) -> None:
    """Cheap under a burst: a recreation cost a GET and a PUT of the ledger; a burst of failures now costs one
    GET in all and fewer writes than records, with every entry kept, a concurrent writer's change
    kept (a conflict re-reads) and a deleted ConfigMap made again."""
    lws = await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(8).size(2).obj())
    counting = _CountingClient(api)
    ledger = FailureLedger(counting)  # type: ignore[arg-type]
    when = datetime.datetime.now(datetime.UTC)

    def entry(group: int) -> Any:
        trigger = Trigger(Cause.DELETION, f"{NAME}-{group}-1")
        return entry_for(trigger, group=str(group), action=Action.RECREATED, when=when)

    written = await asyncio.gather(*(ledger.record(lws, entry=entry(g), group=str(g)) for g in range(6)))
    assert written == [True] * 6
    assert len(await _entries(api, ns)) == 6
    assert counting.calls["get_or_none"] == 1
    assert counting.calls["create"] + counting.calls["update"] < 6, counting.calls

    await ledger.record(lws, entry=entry(6), group="6")
    assert counting.calls["get_or_none"] == 1, "the second write read the ConfigMap again"

    theirs = await _configmap(api, ns)
    assert theirs is not None
    await api.update(CONFIGMAPS, {**theirs, "data": {**theirs["data"], "note": "theirs"}})
    await ledger.record(lws, entry=entry(7), group="7")
    after_conflict = await _configmap(api, ns)
    assert after_conflict is not None
    assert after_conflict["data"]["note"] == "theirs"
    assert len(await _entries(api, ns)) == 8

    await api.delete(CONFIGMAPS, ns, LEDGER)
    await ledger.record(lws, entry=entry(0), group="0")
    assert len(await _entries(api, ns)) == 1
