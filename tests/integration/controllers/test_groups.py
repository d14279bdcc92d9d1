"""The pod (group) controller: restart policies, startup policies, worker StatefulSets built from the
leader's revision, and revision bookkeeping — upstream's entries of leaderworkerset_test.go that
exercise it, as a table of scenarios.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    LEADERWORKERSETS,
    NODES,
    PODS,
    STATEFULSETS,
)
from tests.support import expect, kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder, NodeBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
LEADER = f"{NAME}-0"
Steps = Callable[[KubeClient, str], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    build: Callable[[LeaderWorkerSetBuilder], LeaderWorkerSetBuilder]
    steps: Steps


async def _workers(api: KubeClient, ns: str, group: str | None = None) -> list[dict[str, Any]]:
    selector = "worker.pod=workers" + (f",{c.LABEL_GROUP_INDEX}={group}" if group else "")
    return sorted(await api.list(PODS, ns, label_selector=selector), key=lambda p: p["metadata"]["name"])


async def _start_workers(api: KubeClient, ns: str, leader: str = LEADER, **kw: Any) -> list[dict[str, Any]]:
    lws = await kubelet.get_lws(api, ns, NAME)
    return await kubelet.create_worker_pods(api, lws, await api.get(PODS, ns, leader), **kw)


async def _expect_group_kept(api: KubeClient, ns: str, workers: int) -> None:
    await expect.expect_pod_not_deleting(api, ns, LEADER)
    leaders = await api.list(PODS, ns, label_selector=f"{c.LABEL_WORKER_INDEX}=0")
    assert len(leaders) == 1
    assert len(await _workers(api, ns)) == workers


async def _expect_recreated(api: KubeClient, ns: str, failed_pod: str, leader: str = LEADER) -> None:
    await expect.expect_pod_deleting(api, ns, leader)
    group = leader.rsplit("-", 1)[1]
    note = f"Worker pod {failed_pod} failed, deleted leader pod {leader} to recreate group {group}"
    await expect.expect_event(api, ns, c.EVENT_RECREATE_GROUP, note)


# ----- restart policies ----------------------------------------------------------------------------


async def none_policy_keeps_group(api: KubeClient, ns: str) -> None:
    await _start_workers(api, ns)
    await api.delete(PODS, ns, (await _workers(api, ns))[0]["metadata"]["name"])
    await _expect_group_kept(api, ns, workers=2)


async def recreate_on_worker_deletion(api: KubeClient, ns: str) -> None:
    await _start_workers(api, ns)
    await api.delete(PODS, ns, f"{LEADER}-1")
    await _expect_recreated(api, ns, f"{LEADER}-1")


async def pending_pod_blocks_recreation(api: KubeClient, ns: str) -> None:
    await _start_workers(api, ns)
    await kubelet.set_pod_phase(api, ns, f"{LEADER}-2", "Pending")
    await api.delete(PODS, ns, f"{LEADER}-1")
    await _expect_group_kept(api, ns, workers=2)


async def recreate_after_start(api: KubeClient, ns: str) -> None:
    # Scheduled workers: a deleted one stays terminating (as on a node), so the group is complete.
    await _start_workers(api, ns, node_name="node-a")
    for pod in [LEADER, *(f"{LEADER}-{j}" for j in range(1, 4))]:
        await kubelet.set_pod_phase(api, ns, pod, "Running")
    await api.delete(PODS, ns, f"{LEADER}-1")
    await _expect_recreated(api, ns, f"{LEADER}-1")


async def container_restart_recreates_once(api: KubeClient, ns: str) -> None:
    """A restarted container is a sticky trigger: later events of the pod must not delete again."""
    await _start_workers(api, ns)
    await kubelet.restart_container(api, ns, f"{LEADER}-2")
    await _expect_recreated(api, ns, f"{LEADER}-2")
    await kubelet.set_pod_phase(api, ns, f"{LEADER}-3", "Running")  # one more pod event

    async def one_event() -> bool:
        return len(await expect.events_with(api, ns, c.EVENT_RECREATE_GROUP)) == 1

    await processed.expect_pods_processed(api, ns, [f"{LEADER}-3"])
    await consistently(one_event)


async def leader_restarted_once_during_update(api: KubeClient, ns: str) -> None:
    await kubelet.set_groups_ready(api, ns, 4)
    await _start_workers(api, ns, leader=f"{NAME}-3")
    await expect.expect_available_condition(api, ns)
    await kubelet.update_lws(api, ns, NAME, _rename_worker("new-worker-name"))
    await expect.expect_valid_leader_statefulset(api, ns, 4)
    await expect.expect_status_replicas(api, ns, 4, 0)
    await kubelet.set_group_ready(api, ns, f"{NAME}-3")
    await expect.expect_status_replicas(api, ns, 4, 1)
    # The old group's workers go away with the update: stale, so the new leader stays.
    for worker in await _workers(api, ns, group="3"):
        await api.delete(PODS, ns, worker["metadata"]["name"])
    await expect.expect_pod_not_deleting(api, ns, f"{NAME}-3")
    await kubelet.set_groups_ready(api, ns, 4)
    await _start_workers(api, ns, leader=f"{NAME}-3")
    await expect.expect_valid_worker_statefulsets(api, ns)
    await expect.expect_available_condition(api, ns)
    # A failure in the new group recreates it.
    await api.delete(PODS, ns, f"{NAME}-3-1")
    await _expect_recreated(api, ns, f"{NAME}-3-1", leader=f"{NAME}-3")


def _rename_worker(name: str) -> Callable[[dict[str, Any]], None]:
    def change(lws: dict[str, Any]) -> None:
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["name"] = name

    return change


# ----- startup policies ----------------------------------------------------------------------------


async def _worker_sts_names(api: KubeClient, ns: str) -> set[str]:
    items = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    return {s["metadata"]["name"] for s in items} - {NAME}


async def leader_ready_startup(api: KubeClient, ns: str) -> None:
    await expect.expect_worker_statefulsets_not_created(api, ns)
    await kubelet.set_leaders_ready(api, ns, 0, 2)

    async def first_two() -> bool:
        return await _worker_sts_names(api, ns) == {f"{NAME}-0", f"{NAME}-1"}

    await eventually(first_two)
    await consistently(first_two)
    await kubelet.set_leaders_ready(api, ns, 2, 4)

    async def all_four() -> bool:
        return await _worker_sts_names(api, ns) == {f"{NAME}-{i}" for i in range(4)}

    await eventually(all_four)


async def leader_created_startup(api: KubeClient, ns: str) -> None:
    async def all_four() -> bool:
        return await _worker_sts_names(api, ns) == {f"{NAME}-{i}" for i in range(4)}

    await eventually(all_four)


# ----- worker StatefulSets follow the leader's revision --------------------------------------------


async def _worker_sts(api: KubeClient, ns: str, name: str) -> dict[str, Any]:
    try:
        return await api.get(STATEFULSETS, ns, name)
    except Exception as err:
        raise AssertionError(f"worker statefulset {name}: {err}") from err


async def _expect_worker_revision(api: KubeClient, ns: str, name: str, *, updated: bool) -> None:
    async def check() -> bool:
        lws = await kubelet.get_lws(api, ns, NAME)
        sts = await _worker_sts(api, ns, name)
        current = kubelet.current_revision_key(lws)
        got = sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
        assert (got == current) == updated, f"{name}: key {got}, current {current}, want updated={updated}"
        container = sts["spec"]["template"]["spec"]["containers"][0]["name"]
        want = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["name"]
        assert (container == want) == updated, f"{name}: container {container}"
        return True

    await eventually(check)


async def _recreate_leader_at_first_revision(api: KubeClient, ns: str, index: int) -> None:
    """The leader StatefulSet re-creating an ordinal below the partition: at the old revision."""
    await kubelet.delete_groups(api, ns, index, index + 1)
    revisions = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    first = min(revisions, key=lambda r: int(r["revision"]))
    key = first["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    lws = await kubelet.get_lws(api, ns, NAME)
    await kubelet.create_leader_pods(api, lws, index, index + 1, revision_key=key)


async def old_group_rebuilt_with_old_spec(api: KubeClient, ns: str) -> None:
    await kubelet.set_groups_ready(api, ns, 4)
    await expect.expect_available_condition(api, ns)
    await expect.expect_revisions(api, ns, 1)
    await kubelet.update_lws(api, ns, NAME, _rename_worker("new-worker-name"))
    await expect.expect_valid_leader_statefulset(api, ns, 4)
    await expect.expect_status_replicas(api, ns, 4, 0)
    await expect.expect_revisions(api, ns, 2)
    await kubelet.set_group_ready(api, ns, f"{NAME}-3")
    await _expect_worker_revision(api, ns, f"{NAME}-3", updated=True)
    for i in range(3):
        await _expect_worker_revision(api, ns, f"{NAME}-{i}", updated=False)
    await expect.expect_status_replicas(api, ns, 4, 1)
    await _recreate_leader_at_first_revision(api, ns, 0)
    await _expect_worker_revision(api, ns, f"{NAME}-0", updated=False)
    await _expect_worker_revision(api, ns, f"{NAME}-3", updated=True)
    await expect.expect_revisions(api, ns, 2)
    await kubelet.set_groups_ready(api, ns, 4)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await expect.expect_available_condition(api, ns)
    await expect.expect_revisions(api, ns, 1)


async def old_group_rebuilt_with_old_size(api: KubeClient, ns: str) -> None:
    await kubelet.set_groups_ready(api, ns, 4)
    await expect.expect_available_condition(api, ns)

    def resize(lws: dict[str, Any]) -> None:
        _rename_worker("new-worker-name")(lws)
        lws["spec"]["leaderWorkerTemplate"]["size"] = 2

    await kubelet.update_lws(api, ns, NAME, resize)
    await expect.expect_valid_leader_statefulset(api, ns, 4)
    await expect.expect_revisions(api, ns, 2)
    await kubelet.set_group_ready(api, ns, f"{NAME}-3")
    await _expect_worker_revision(api, ns, f"{NAME}-3", updated=True)
    await _recreate_leader_at_first_revision(api, ns, 0)

    async def old_shape() -> bool:
        sts = await _worker_sts(api, ns, f"{NAME}-0")
        size = sts["spec"]["template"]["metadata"]["annotations"][c.ANNOTATION_SIZE]
        assert (sts["spec"]["replicas"], size) == (3, "4"), (sts["spec"]["replicas"], size)
        return True

    await eventually(old_shape)


async def worker_of_a_gone_statefulset_is_freed(api: KubeClient, ns: str) -> None:
    """(ours) The garbage collector can miss the pods of a deleted worker StatefulSet (across an API
    server restart; this cluster shape runs no collector at all). Such a pod holds a worker name
    the group's next StatefulSet needs: the controller deletes it (its owner is gone) and then
    builds the StatefulSet, without recreating the group."""

    async def first() -> dict[str, Any]:
        return await _worker_sts(api, ns, LEADER)

    old = await eventually(first)
    leader = await api.get(PODS, ns, LEADER)
    [worker] = await _start_workers(api, ns)
    owned = {"ownerReferences": [kubelet.owner_reference(old, "apps/v1", "StatefulSet")]}
    worker = await api.patch(PODS, ns, worker["metadata"]["name"], {"metadata": owned})
    await api.delete(STATEFULSETS, ns, LEADER)
    name = worker["metadata"]["name"]

    async def deleted_by_the_controller() -> bool:
        pod = await api.get_or_none(PODS, ns, name)
        assert pod is None or "deletionTimestamp" in pod["metadata"], "the stale worker pod is not deleted"
        return True

    await eventually(deleted_by_the_controller)
    # The garbage collector's part of a foreground delete (this shape has none): the finalizer goes.
    with contextlib.suppress(Exception):
        await api.merge_patch(PODS, ns, name, {"metadata": {"finalizers": None}})

    async def rebuilt() -> bool:
        sts = await api.get_or_none(STATEFULSETS, ns, LEADER)
        assert sts is not None, "no worker statefulset"
        assert sts["metadata"]["uid"] != old["metadata"]["uid"], "no new worker statefulset"
        assert await api.get_or_none(PODS, ns, name) is None, "the stale worker pod is still there"
        return True

    await eventually(rebuilt)
    current = await api.get(PODS, ns, LEADER)
    assert current["metadata"]["uid"] == leader["metadata"]["uid"]
    assert "deletionTimestamp" not in current["metadata"]


async def worker_of_a_predecessor_made_late_is_freed(api: KubeClient, ns: str) -> None:
    """(ours) kube-controller-manager, its cache lagging across an API server restart, can create a
    worker pod for a worker StatefulSet that is already gone and replaced under the same name; its
    garbage collector never deletes that pod. It holds a name the new StatefulSet needs: the
    controller deletes it even though the pod arrives after the new StatefulSet, when nothing but the
    pod itself can wake the group's leader."""

    async def built() -> dict[str, Any]:
        return await _worker_sts(api, ns, LEADER)

    current = await eventually(built)
    await processed.expect_statefulset_cached(api, ns, LEADER)
    await processed.expect_pods_processed(api, ns, [LEADER])
    leader = await api.get(PODS, ns, LEADER)
    predecessor = {**current, "metadata": {**current["metadata"], "uid": str(uuid.uuid4())}}
    owner = kubelet.owner_reference(predecessor, "apps/v1", "StatefulSet")
    [worker] = await _start_workers(api, ns, owner=owner)

    async def deleted_by_the_controller() -> bool:
        pod = await api.get_or_none(PODS, ns, worker["metadata"]["name"])
        assert pod is None or "deletionTimestamp" in pod["metadata"], (
            "the predecessor's worker pod is not deleted"
        )
        return True

    await eventually(deleted_by_the_controller)
    assert (await api.get(STATEFULSETS, ns, LEADER))["metadata"]["uid"] == current["metadata"]["uid"]
    kept = await api.get(PODS, ns, LEADER)
    assert kept["metadata"]["uid"] == leader["metadata"]["uid"]
    assert "deletionTimestamp" not in kept["metadata"]


async def missing_revision_matches_leader_sts(api: KubeClient, ns: str) -> None:
    await kubelet.set_groups_ready(api, ns, 2)
    await expect.expect_available_condition(api, ns)
    await expect.expect_revisions(api, ns, 1)

    async def relabel() -> bool:
        sts = await api.get(STATEFULSETS, ns, NAME)
        sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = "template-hash"
        try:
            await api.update(STATEFULSETS, sts)
        except Exception as err:
            raise AssertionError(str(err)) from err
        return True

    await eventually(relabel)

    async def revision_created() -> bool:
        selector = f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_TEMPLATE_REVISION_HASH}=template-hash"
        return bool(await api.list(CONTROLLER_REVISIONS, ns, label_selector=selector))

    await eventually(revision_created)
    await kubelet.set_groups_ready(api, ns, 2)
    await expect.expect_available_condition(api, ns)
    await expect.expect_revisions(api, ns, 1)
    await expect.expect_status_replicas(api, ns, 2, 2)


# ----- worker StatefulSet contents (ours: upstream checks these in unit tests) ------------------------

TOPOLOGY_KEY = "cloud.google.com/gke-nodepool"


async def exclusive_placement_pins_workers(api: KubeClient, ns: str) -> None:
    """Once a leader is bound, its workers are pinned to the leader's topology domain; a node
    without the topology label is an error (retried), never a wrongly placed group."""
    node = f"node-{ns[-6:]}"
    await api.create(NODES, NodeBuilder(node).label(TOPOLOGY_KEY, "pool-a").obj())
    bare = f"bare-{ns[-6:]}"
    await api.create(NODES, NodeBuilder(bare).obj())
    try:
        lws = await kubelet.get_lws(api, ns, NAME)
        await expect.expect_worker_statefulsets_not_created(api, ns)
        await api.delete(PODS, ns, LEADER)
        await kubelet.create_leader_pods(api, lws, 0, 1, node_name=node)

        async def pinned() -> bool:
            sts = await _worker_sts(api, ns, LEADER)
            assert sts["spec"]["template"]["spec"].get("nodeSelector") == {TOPOLOGY_KEY: "pool-a"}
            annotations = sts["spec"]["template"]["metadata"]["annotations"]
            assert annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY] == TOPOLOGY_KEY
            return True

        await eventually(pinned)
        await api.delete(PODS, ns, f"{NAME}-1")
        await kubelet.create_leader_pods(api, lws, 1, 2, node_name=bare)

        async def not_created() -> bool:
            return f"{NAME}-1" not in await _worker_sts_names(api, ns)

        # Positive sign first: the controller reconciled the leader on the bare node (and failed).
        await processed.expect_pods_processed(api, ns, [f"{NAME}-1"])
        await consistently(not_created)
    finally:
        for name in (node, bare):
            await api.delete(NODES, None, name)


async def unique_per_replica_worker_service(api: KubeClient, ns: str) -> None:
    async def check() -> bool:
        for i in range(2):
            sts = await _worker_sts(api, ns, f"{NAME}-{i}")
            assert sts["spec"]["serviceName"] == f"{NAME}-{i}", sts["spec"]["serviceName"]
            address = sts["spec"]["template"]["metadata"]["annotations"][c.ANNOTATION_LEADER_ADDRESS]
            assert address == f"{NAME}-{i}.{NAME}-{i}.{ns}", address
        return True

    await eventually(check)


async def tpu_leader_marks_workers(api: KubeClient, ns: str) -> None:
    async def check() -> bool:
        sts = await _worker_sts(api, ns, LEADER)
        annotations = sts["spec"]["template"]["metadata"]["annotations"]
        assert annotations.get(c.ANNOTATION_LEADER_REQUESTS_TPUS) == "true", annotations
        assert sts["metadata"]["labels"][c.LABEL_ROLE] == c.ROLE_WORKER
        return True

    await eventually(check)


def _tpu_leader(b: LeaderWorkerSetBuilder) -> LeaderWorkerSetBuilder:
    return b.replicas(1).leader_resources({"google.com/tpu": "4"})


CASES = [
    pytest.param(
        Case(lambda b: b.restart_policy(c.RESTART_POLICY_NONE).replicas(1).size(4), none_policy_keeps_group),
        id="Pod restart will not recreate the pod group when restart policy is None",
    ),
    pytest.param(
        Case(lambda b: b.replicas(1).size(4), recreate_on_worker_deletion),
        id="Pod restart will delete the pod group when restart policy is RecreateGroupOnPodRestart",
    ),
    pytest.param(
        Case(
            lambda b: (
                b.replicas(1).size(4).annotation(c.ANNOTATION_EXPERIMENTAL_RECREATE_GROUP_AFTER_START, "")
            ),
            pending_pod_blocks_recreation,
        ),
        id="Pod restart will not recreate the pod group when restart policy is RecreateGroupOnPodRestart, "
        "RecreateGroupAfterStart annotation is set, and a pod is pending",
    ),
    pytest.param(
        Case(
            lambda b: b.restart_policy(c.RESTART_POLICY_RECREATE_GROUP_AFTER_START).replicas(1).size(4),
            pending_pod_blocks_recreation,
        ),
        id="Pod restart will not recreate the pod group when restart policy is RecreateGroupAfterStart, "
        "and a pod is pending",
    ),
    pytest.param(
        Case(
            lambda b: b.restart_policy(c.RESTART_POLICY_RECREATE_GROUP_AFTER_START).replicas(1).size(4),
            recreate_after_start,
        ),
        id="Pod restart will recreate the pod group when restart policy is RecreateGroupAfterStart, "
        "and no pod is pending",
    ),
    pytest.param(
        Case(lambda b: b.replicas(1).size(4), container_restart_recreates_once),
        id="(ours) container restart recreates the group exactly once",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4), leader_restarted_once_during_update),
        id="leader with RecreateGroupOnPodRestart only gets restarted once during rolling update",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4), old_group_rebuilt_with_old_spec),
        id="Not updated worker gets recreated with old worker spec if restarted during update",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4).size(4), old_group_rebuilt_with_old_size),
        id="Not updated worker gets recreated with old size if restarted during update that changes size",
    ),
    pytest.param(
        Case(lambda b: b, missing_revision_matches_leader_sts),
        id="if a leaderSts exists, but a matching controllerRevision doesn't, "
        "it will create one that matches the leaderSts",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4).startup_policy(c.STARTUP_POLICY_LEADER_READY), leader_ready_startup),
        id="create a leaderworkerset with spec.startupPolicy=LeaderReady",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4).startup_policy(c.STARTUP_POLICY_LEADER_CREATED), leader_created_startup),
        id="create a leaderworkerset with spec.startupPolicy=LeaderCreated",
    ),
    pytest.param(
        Case(lambda b: b.exclusive_placement(TOPOLOGY_KEY), exclusive_placement_pins_workers),
        id="(ours) exclusive placement pins workers to the leader's topology domain",
    ),
    pytest.param(
        Case(lambda b: b.subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA), unique_per_replica_worker_service),
        id="(ours) UniquePerReplica workers use the leader's own service and address",
    ),
    pytest.param(Case(_tpu_leader, tpu_leader_marks_workers), id="(ours) a TPU leader marks its workers"),
    pytest.param(
        Case(lambda b: b.replicas(1), worker_of_a_gone_statefulset_is_freed),
        id="(ours) a worker pod of a gone worker StatefulSet is deleted before the group's next one is built",
    ),
    pytest.param(
        Case(lambda b: b.replicas(1), worker_of_a_predecessor_made_late_is_freed),
        id="(ours) a worker pod made for a replaced worker StatefulSet after its successor is deleted",
    ),
]


@pytest.mark.parametrize("case", CASES)
async def test_groups(api: KubeClient, ns: str, case: Case) -> None:
    lws = await api.create(LEADERWORKERSETS, case.build(LeaderWorkerSetBuilder(ns)).obj())
    await kubelet.create_leader_pods(api, lws, 0, int(lws["spec"]["replicas"]))
    await case.steps(api, ns)
