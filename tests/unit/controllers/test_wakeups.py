"""Which pod and worker-StatefulSet updates wake the pod controller (controllers/wakeups.py):
tables of old/new pairs as the caches hold them (projections)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.wakeups import (
    idle_worker,
    pod_update_matters,
    set_pod_update_matters,
    set_statefulset_update_matters,
    worker_statefulset_update_matters,
)
from leaderworkerset.runtime.projections import Pod, StatefulSet
from tests.support.builders.pod import PodBuilder, leader, worker
from tests.support.builders.statefulset import worker_statefulset

ZONE = "topology.kubernetes.io/zone"


def created() -> PodBuilder:
    return worker("w-1-1").worker_index("1")


def bound(pod: PodBuilder) -> PodBuilder:
    """What the scheduler's binding adds: the node, PodScheduled, and the node's zone label."""
    return pod.node("kwok-node-3").condition("PodScheduled").label(ZONE, "zone-a")


def host_ip(obj: dict[str, Any]) -> dict[str, Any]:
    obj.setdefault("status", {})["hostIP"] = "10.0.0.3"
    return obj


def rv(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


POD_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("a worker bound to a node", created().obj(), host_ip(bound(created()).obj()), False),
    (
        "a worker bound, no zone label",
        created().obj(),
        created().node("n").condition("PodScheduled").obj(),
        False,
    ),
    ("only the resource version moves", rv(created().obj(), "1"), rv(created().obj(), "2"), False),
    ("a leader bound: exclusive placement waits for it", leader().obj(), bound(leader()).obj(), True),
    (
        "a worker that was unschedulable is bound",
        created().condition("PodScheduled", "False", reason="Unschedulable").obj(),
        bound(created()).obj(),
        True,
    ),
    ("bound and ready at once", created().obj(), bound(created()).condition("Ready").obj(), True),
    ("bound and relabelled", created().obj(), bound(created()).label("team", "a").obj(), True),
    ("bound and annotated", created().obj(), bound(created()).annotation("note", "x").obj(), True),
    ("bound and its zone label changes", created().label(ZONE, "zone-b").obj(), bound(created()).obj(), True),
    (
        "a bound worker starts",
        bound(created()).obj(),
        bound(created()).phase("Running").container_status("w", ready=True).obj(),
        True,
    ),
    (
        "a bound worker's container restarts",
        bound(created()).obj(),
        bound(created()).container_status("w", restarts=1).obj(),
        True,
    ),
    ("a bound worker is deleted", bound(created()).obj(), bound(created()).deleting().obj(), True),
    ("a pod without a worker index is bound", worker("w-1-1").obj(), bound(worker("w-1-1")).obj(), True),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [case[1:] for case in POD_CASES], ids=[case[0] for case in POD_CASES]
)
def test_pod_update_matters(old: dict[str, Any], new: dict[str, Any], want: bool) -> None:
    assert pod_update_matters(msgspec.convert(old, Pod), msgspec.convert(new, Pod)) is want


def test_every_pod_case_ran() -> None:
    assert len(POD_CASES) == 13


def finalized(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["finalizers"] = [c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP]
    return obj


def unlabelled(obj: dict[str, Any], key: str) -> dict[str, Any]:
    del obj["metadata"]["labels"][key]
    return obj


def running(pod: PodBuilder) -> PodBuilder:
    return bound(pod).phase("Running").container_status("w", ready=False)


IDLE_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("a worker just created", created().obj(), True),
    ("a worker bound to a node", bound(created()).obj(), True),
    ("a worker started, not ready yet", running(created()).obj(), True),
    (
        "a worker whose containers are ready, the pod not yet",
        bound(created()).container_status("w", ready=True).obj(),
        True,
    ),
    ("a worker that failed without a restart (phase Failed)", bound(created()).phase("Failed").obj(), True),
    ("a ready worker: its group's time to ready", running(created()).condition("Ready").obj(), False),
    ("a worker whose container restarted", running(created()).container_status("w", restarts=1).obj(), False),
    ("a worker being deleted", running(created()).deleting().obj(), False),
    ("a worker a spent restart budget retains", finalized(running(created()).obj()), False),
    ("a leader", leader().obj(), False),
    ("a pod without a worker index", unlabelled(created().obj(), c.LABEL_WORKER_INDEX), False),
    ("a pod with an empty set name", created().label(c.LABEL_SET_NAME, "").obj(), False),
]


@pytest.mark.parametrize(
    ("pod", "want"), [case[1:] for case in IDLE_CASES], ids=[case[0] for case in IDLE_CASES]
)
def test_idle_worker(pod: dict[str, Any], want: bool) -> None:
    assert idle_worker(msgspec.convert(pod, Pod)) is want


def test_every_idle_case_ran() -> None:
    assert len(IDLE_CASES) == 12


LEADER = leader("g-1").group_index("1").uid("leader-uid").label(c.LABEL_GROUP_KEY, "k").revision("r").obj()


def sts(
    *,
    available: int = 0,
    replicas: int = 3,
    current: str = "r1",
    update: str = "r1",
    generation: int = 1,
    **status: int,
) -> dict[str, Any]:
    obj = worker_statefulset(LEADER, ready=False, replicas=replicas)
    obj["metadata"]["generation"] = generation
    obj["status"] |= {
        "availableReplicas": available,
        "currentRevision": current,
        "updateRevision": update,
    } | status
    return obj


def changed(obj: dict[str, Any], section: str, **fields: Any) -> dict[str, Any]:
    obj[section] |= fields
    return obj


def held(obj: dict[str, Any]) -> dict[str, Any]:
    """The partition an in-place update holds at the replicas."""
    partition = obj["spec"]["replicas"]
    return changed(
        obj, "spec", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    )


STS_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("replicas counted, still unready", sts(), sts(replicas=3, readyReplicas=1, currentReplicas=2), False),
    ("one more available, still unready", sts(available=1), sts(available=2), False),
    ("ready, a count it does not read moves", sts(available=3), sts(available=3, readyReplicas=3), False),
    ("only the resource version moves", rv(sts(), "1"), rv(sts(), "2"), False),
    ("becomes ready", sts(available=2), sts(available=3), True),
    ("stops being ready", sts(available=3), sts(available=2), True),
    ("its own rollout starts", sts(available=3), sts(available=3, update="r2"), True),
    (
        "its rollout of a patched, unready set starts",
        sts(available=1, generation=2),
        sts(available=1, update="r2", generation=2),
        True,
    ),
    (
        "its controller observes a patched template",
        sts(generation=2, observedGeneration=1),
        sts(generation=2, observedGeneration=2),
        True,
    ),
    (
        "its controller catches up with the creation",
        sts(current="", update="", observedGeneration=0),
        sts(observedGeneration=1),
        False,
    ),
    ("scaled", sts(), changed(sts(), "spec", replicas=4), True),
    ("deleted", sts(), changed(sts(), "metadata", deletionTimestamp="2026-01-01T00:00:00Z"), True),
    ("relabelled", sts(), changed(sts(), "metadata", labels={"x": "y"}), True),
    ("its owner changes", sts(), changed(sts(), "metadata", ownerReferences=[]), True),
    ("an updated count moves, partition 0", sts(updatedReplicas=1), sts(updatedReplicas=2), False),
    (
        "an updated count moves, partition held",
        held(sts(updatedReplicas=1)),
        held(sts(updatedReplicas=2)),
        True,
    ),
    ("a held set's other count moves", held(sts(available=1)), held(sts(available=2)), False),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [case[1:] for case in STS_CASES], ids=[case[0] for case in STS_CASES]
)
def test_worker_statefulset_update_matters(old: dict[str, Any], new: dict[str, Any], want: bool) -> None:
    got = worker_statefulset_update_matters(
        msgspec.convert(old, StatefulSet), msgspec.convert(new, StatefulSet)
    )
    assert got is want


def test_every_statefulset_case_ran() -> None:
    assert len(STS_CASES) == 17


def leader_statefulset(**status: Any) -> dict[str, Any]:
    obj = sts(**status)
    obj["metadata"]["name"] = obj["metadata"]["labels"][c.LABEL_SET_NAME]
    return obj


SET_STS_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("a worker StatefulSet's counts move", sts(available=1), sts(available=2), False),
    ("a worker StatefulSet becomes ready", sts(available=2), sts(available=3), True),
    (
        "the leader StatefulSet's ready counts move",
        leader_statefulset(available=1, readyReplicas=1),
        leader_statefulset(available=2, readyReplicas=2),
        False,
    ),
    (
        "the leader StatefulSet's updated count moves, partition 0",
        leader_statefulset(updatedReplicas=1),
        leader_statefulset(updatedReplicas=2),
        False,
    ),
    (
        "the leader StatefulSet's updated count moves, partition held (in place)",
        held(leader_statefulset(updatedReplicas=1)),
        held(leader_statefulset(updatedReplicas=2)),
        True,
    ),
    (
        "only the leader StatefulSet's version moves",
        rv(leader_statefulset(), "1"),
        rv(leader_statefulset(), "2"),
        False,
    ),
    (
        "the leader StatefulSet's pods are counted",
        changed(leader_statefulset(), "status", replicas=2),
        changed(leader_statefulset(), "status", replicas=3),
        True,
    ),
    (
        "the leader StatefulSet's rollout starts",
        leader_statefulset(available=3, generation=2),
        leader_statefulset(available=3, update="r2", generation=2),
        True,
    ),
    (
        "the leader StatefulSet's rollout ends",
        leader_statefulset(available=3, current="r1", update="r2", generation=2),
        leader_statefulset(available=3, current="r2", update="r2", generation=2),
        True,
    ),
    (
        "the leader StatefulSet's controller catches up with the creation",
        leader_statefulset(current="", update="", observedGeneration=0),
        leader_statefulset(observedGeneration=1),
        False,
    ),
    (
        "the leader StatefulSet's controller observes a patched template",
        leader_statefulset(generation=2, observedGeneration=1),
        leader_statefulset(generation=2, observedGeneration=2),
        True,
    ),
    (
        "the leader StatefulSet is scaled",
        leader_statefulset(),
        changed(leader_statefulset(), "spec", replicas=5),
        True,
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [case[1:] for case in SET_STS_CASES], ids=[case[0] for case in SET_STS_CASES]
)
def test_set_statefulset_update_matters(old: dict[str, Any], new: dict[str, Any], want: bool) -> None:
    got = set_statefulset_update_matters(msgspec.convert(old, StatefulSet), msgspec.convert(new, StatefulSet))
    assert got is want


def test_every_set_statefulset_case_ran() -> None:
    assert len(SET_STS_CASES) == 12


SET_POD_CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    ("a leader bound to a node", leader().obj(), host_ip(bound(leader()).obj()), False),
    ("a worker bound to a node", created().obj(), bound(created()).obj(), False),
    ("only a leader's resource version moves", rv(leader().obj(), "1"), rv(leader().obj(), "2"), False),
    (
        "a leader that was unschedulable is bound (surge fallback counts those)",
        leader().condition("PodScheduled", "False", reason="Unschedulable").obj(),
        bound(leader()).obj(),
        True,
    ),
    ("a leader becomes ready", bound(leader()).obj(), bound(leader()).condition("Ready").obj(), True),
    ("a leader is annotated", bound(leader()).obj(), bound(leader()).annotation("note", "x").obj(), True),
    ("a leader is deleted", bound(leader()).obj(), bound(leader()).deleting().obj(), True),
]


@pytest.mark.parametrize(
    ("old", "new", "want"), [case[1:] for case in SET_POD_CASES], ids=[case[0] for case in SET_POD_CASES]
)
def test_set_pod_update_matters(old: dict[str, Any], new: dict[str, Any], want: bool) -> None:
    assert set_pod_update_matters(msgspec.convert(old, Pod), msgspec.convert(new, Pod)) is want


def test_every_set_pod_case_ran() -> None:
    assert len(SET_POD_CASES) == 7


def test_a_leader_binding_wakes_the_pod_controller_only_where_placement_waits_for_it() -> None:
    old, new = msgspec.convert(leader().obj(), Pod), msgspec.convert(bound(leader()).obj(), Pod)
    assert pod_update_matters(old, new, lambda: True)
    assert not pod_update_matters(old, new, lambda: False)
    ready = msgspec.convert(bound(leader()).condition("Ready").obj(), Pod)
    assert pod_update_matters(old, ready, lambda: False)  # bound and more: always
