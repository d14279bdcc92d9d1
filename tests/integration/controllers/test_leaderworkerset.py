"""Our table of upstream's `test/integration/controllers` scenarios (leaderworkerset_test.go).

Each row creates an LWS from the builder in a fresh namespace, lets the test act as the StatefulSet
controller (leader pods for every ordinal) and then runs its steps. Ids are upstream's entry names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.rollout.revision import hash_patch, revision_patch
from leaderworkerset.runtime.client import PROPAGATION_FOREGROUND, KubeClient
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    LEADERWORKERSETS,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from tests.support import expect, kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
Steps = Callable[[KubeClient, str], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    build: Callable[[LeaderWorkerSetBuilder], LeaderWorkerSetBuilder]
    steps: Steps


async def _lws(api: KubeClient, ns: str) -> dict:  # type: ignore[type-arg]
    return await kubelet.get_lws(api, ns, NAME)


async def _set_replicas(api: KubeClient, ns: str, replicas: int) -> dict:  # type: ignore[type-arg]
    def change(lws: dict) -> None:  # type: ignore[type-arg]
        lws["spec"]["replicas"] = replicas

    return await kubelet.update_lws(api, ns, NAME, change)


async def _delete_leaders_above(api: KubeClient, ns: str, replicas: int, current: int) -> None:
    """The StatefulSet controller removing ordinals >= replicas (and GC their worker StatefulSets)."""
    for i in range(replicas, current):
        await api.delete(PODS, ns, f"{NAME}-{i}")
        with contextlib.suppress(Exception):  # the garbage collector's part
            await api.delete(STATEFULSETS, ns, f"{NAME}-{i}")


async def _all_groups_ready(api: KubeClient, ns: str, groups: int) -> None:
    lws = await _lws(api, ns)
    if int(lws["spec"]["leaderWorkerTemplate"]["size"]) == 1:
        await kubelet.set_leaders_ready(api, ns, 0, groups)
    else:
        await kubelet.set_groups_ready(api, ns, groups)


# ----- scenarios --------------------------------------------------------------------------------------


async def scale_up(api: KubeClient, ns: str) -> None:
    lws = await _set_replicas(api, ns, 3)
    await kubelet.create_leader_pods(api, lws, 2, 3)
    await expect.expect_valid_leader_statefulset(api, ns, 3)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def scale_down(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_worker_statefulsets(api, ns)
    await _set_replicas(api, ns, 3)
    await _delete_leaders_above(api, ns, 3, 4)
    await expect.expect_valid_leader_statefulset(api, ns, 3)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def scale_down_to_zero(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_worker_statefulsets(api, ns)
    await _set_replicas(api, ns, 0)
    await _delete_leaders_above(api, ns, 0, 2)
    await expect.expect_valid_leader_statefulset(api, ns, 0)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def scale_up_from_zero(api: KubeClient, ns: str) -> None:
    lws = await _set_replicas(api, ns, 3)
    await kubelet.create_leader_pods(api, lws, 0, 3)
    await expect.expect_valid_leader_statefulset(api, ns, 3)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def size_one(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await _all_groups_ready(api, ns, 2)
    await expect.expect_available_condition(api, ns)


async def zero_replicas(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_leader_statefulset(api, ns, 0)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await expect_zero_counts_omitted(api, ns)


async def expect_zero_counts_omitted(api: KubeClient, ns: str) -> None:
    """Read back from the API server, the status of a set with no groups has no count fields at
    all, as upstream's `omitempty` Go types write it (`-o jsonpath='{.status.replicas}'` prints
    nothing), once the controller has written it (observedGeneration and Available are the sign)."""

    async def written() -> dict:  # type: ignore[type-arg]
        lws = await _lws(api, ns)
        status = lws.get("status") or {}
        assert status.get("observedGeneration") == lws["metadata"]["generation"], status
        assert [cond["type"] for cond in status.get("conditions") or []] == [c.CONDITION_AVAILABLE], status
        return status

    status = await eventually(written)
    assert {"replicas", "readyReplicas", "updatedReplicas"} & set(status) == set(), status
    assert status["hpaPodSelector"] == f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_WORKER_INDEX}=0"


async def create_two_groups_of_four(api: KubeClient, ns: str) -> None:
    await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, f"Created leader statefulset {NAME}")
    for i in range(2):
        note = f"Created worker statefulset for leader pod {NAME}-{i}"
        await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, note)
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def worker_statefulset_recreated(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_worker_statefulsets(api, ns)
    await api.delete(STATEFULSETS, ns, f"{NAME}-0")
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)


async def headless_service_created(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_services(api, ns, 1)


async def service_recreated(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_services(api, ns, 1)
    await api.delete(SERVICES, ns, NAME)
    await expect.expect_valid_services(api, ns, 1)


async def unique_per_replica_services(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_services(api, ns, 2)


async def leader_statefulset_recreated(api: KubeClient, ns: str) -> None:
    await api.delete(STATEFULSETS, ns, NAME)
    await expect.expect_valid_leader_statefulset(api, ns, 2)


async def scale_subresource(api: KubeClient, ns: str) -> None:
    async def check() -> bool:
        lws = await _lws(api, ns)
        scale = await api.request("GET", LEADERWORKERSETS.object_path(ns, NAME, "scale"))
        assert scale["spec"]["replicas"] == lws["spec"]["replicas"]
        # Both omit a zero count (Go's omitempty); absent reads as 0, as upstream's typed test reads it.
        assert scale["status"].get("replicas", 0) == lws["status"].get("replicas", 0)
        assert lws["status"]["hpaPodSelector"] == (f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_WORKER_INDEX}=0"), (
            lws["status"]
        )
        return True

    await eventually(check)


async def scale_through_scale_endpoint(api: KubeClient, ns: str) -> None:
    await scale_subresource(api, ns)
    path = LEADERWORKERSETS.object_path(ns, NAME, "scale")

    async def put_scale() -> bool:
        # The scale object shares the LWS resourceVersion, which status writes keep moving.
        scale = await api.request("GET", path)
        scale["spec"]["replicas"] = 3
        try:
            await api.request("PUT", path, body=scale)
        except Exception as err:
            raise AssertionError(str(err)) from err
        return True

    await eventually(put_scale)

    async def three() -> bool:
        return bool((await _lws(api, ns))["spec"]["replicas"] == 3)

    await eventually(three)
    await expect.expect_valid_leader_statefulset(api, ns, 3)


async def available_state(api: KubeClient, ns: str) -> None:
    await _all_groups_ready(api, ns, 2)
    await expect.expect_available_condition(api, ns)


async def progressing_available_progressing(api: KubeClient, ns: str) -> None:
    await expect.expect_progressing(api, ns)
    note = "Replicas are progressing, with 0 groups ready of total 2 groups"
    await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, note)
    await _all_groups_ready(api, ns, 2)
    await expect.expect_condition(api, ns, c.CONDITION_PROGRESSING, c.CONDITION_FALSE)
    await expect.expect_available_condition(api, ns)
    await expect.expect_event(
        api, ns, c.REASON_ALL_GROUPS_READY, "All replicas are ready, with 2 groups ready of total 2 groups"
    )
    await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"spec": {"replicas": 3}})
    await expect.expect_progressing(api, ns)
    await expect.expect_condition(api, ns, c.CONDITION_AVAILABLE, c.CONDITION_FALSE)
    note = "Replicas are progressing, with 2 groups ready of total 3 groups"
    await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, note)


async def exclusive_placement_waits_for_scheduling(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await expect.expect_valid_worker_statefulsets(api, ns, leader_scheduled=False)
    await expect.expect_worker_statefulsets_not_created(api, ns)


async def progressing_with_event(api: KubeClient, ns: str) -> None:
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await expect.expect_progressing(api, ns)
    note = "Replicas are progressing, with 0 groups ready of total 2 groups"
    await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, note)


async def no_update_in_progress_at_creation(api: KubeClient, ns: str) -> None:
    await expect.expect_progressing(api, ns)
    conditions = (await _lws(api, ns)).get("status", {}).get("conditions") or []
    assert not any(
        cond["type"] == c.CONDITION_UPDATE_IN_PROGRESS and cond["status"] == c.CONDITION_TRUE
        for cond in conditions
    ), conditions


async def default_progressing(api: KubeClient, ns: str) -> None:
    async def clear_conditions() -> bool:
        lws = await _lws(api, ns)
        lws.setdefault("status", {})["conditions"] = []
        try:
            await api.update(LEADERWORKERSETS, lws, "status")
        except Exception as err:
            raise AssertionError(str(err)) from err
        return True

    await expect.expect_progressing(api, ns)
    await eventually(clear_conditions)
    await expect.expect_progressing(api, ns)


async def available_with_event(api: KubeClient, ns: str) -> None:
    await _all_groups_ready(api, ns, 2)
    await expect.expect_available_condition(api, ns)
    await expect.expect_event(
        api, ns, c.REASON_ALL_GROUPS_READY, "All replicas are ready, with 2 groups ready of total 2 groups"
    )


async def invalid_template_reported(api: KubeClient, ns: str) -> None:
    """An LWS the CRD accepts but whose leader StatefulSet the API server rejects: a Warning event
    with the API server's message, retried, and the controller keeps serving other sets."""

    async def failed_create() -> bool:
        for event in await expect.events_with(api, ns, c.EVENT_FAILED_CREATE):
            note = event.get("note") or ""
            prefix = f"Failed to create leader statefulset {NAME}: "
            if event.get("type") == "Warning" and note.startswith(prefix) and "is invalid" in note:
                return True
        raise AssertionError("no FailedCreate event")

    await eventually(failed_create)
    healthy = LeaderWorkerSetBuilder(ns, name="healthy").replicas(1).size(1).obj()
    await api.create(LEADERWORKERSETS, healthy)
    await expect.expect_valid_leader_statefulset(api, ns, 1, name="healthy")


CASES = [
    pytest.param(Case(lambda b: b.replicas(2), scale_up), id="scale up number of groups"),
    pytest.param(Case(lambda b: b.replicas(4), scale_down), id="scale down number of groups"),
    pytest.param(Case(lambda b: b.replicas(2), scale_down_to_zero), id="scale down to 0"),
    pytest.param(Case(lambda b: b.replicas(0), scale_up_from_zero), id="scale up from 0"),
    pytest.param(Case(lambda b: b.size(1), size_one), id="group size is 1"),
    pytest.param(Case(lambda b: b.replicas(0), zero_replicas), id="zero replicas"),
    pytest.param(
        Case(lambda b: b.size(4), create_two_groups_of_four),
        id="Successfully create a leaderworkerset with 2 groups, size as 4.",
    ),
    pytest.param(
        Case(lambda b: b.replicas(2), worker_statefulset_recreated),
        id="Deleted worker statefulSet will be recreated",
    ),
    pytest.param(Case(lambda b: b, headless_service_created), id="headless service created"),
    pytest.param(Case(lambda b: b, service_recreated), id="service deleted will be recreated"),
    pytest.param(
        Case(lambda b: b.subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA), unique_per_replica_services),
        id="subdomain policy LeadersSharedWorkersDedicated, more than one headless service created",
    ),
    pytest.param(
        Case(lambda b: b, leader_statefulset_recreated), id="leader statefulset deleted will be recreated"
    ),
    pytest.param(Case(lambda b: b, scale_subresource), id="Able to get scale subResource information"),
    pytest.param(
        Case(lambda b: b, scale_through_scale_endpoint),
        id="HPA is able trigger scaling up/down through scale endpoint",
    ),
    pytest.param(Case(lambda b: b, available_state), id="Test available state"),
    pytest.param(
        Case(lambda b: b, progressing_available_progressing),
        id="Testing condition switch from progressing to available to progressing",
    ),
    pytest.param(
        Case(lambda b: b.exclusive_placement(), exclusive_placement_waits_for_scheduling),
        id="Leader/worker pods/Statefulset have required labels and annotations "
        "when exclusive placement enabled",
    ),
    pytest.param(
        Case(lambda b: b, progressing_with_event),
        id="Replicas are processing will set condition to progressing "
        "with correct message with correct event",
    ),
    pytest.param(
        Case(lambda b: b.replicas(4).max_surge(2), no_update_in_progress_at_creation),
        id="Ensure UpdateInProgress condition is not set during LWS initialization",
    ),
    pytest.param(Case(lambda b: b, default_progressing), id="Test default progressing state"),
    pytest.param(
        Case(lambda b: b, available_with_event), id="Leaderworkerset has available state with correct event"
    ),
]


@pytest.mark.parametrize("case", CASES)
async def test_leaderworkerset(api: KubeClient, ns: str, case: Case) -> None:
    lws = await api.create(LEADERWORKERSETS, case.build(LeaderWorkerSetBuilder(ns)).obj())
    await kubelet.create_leader_pods(api, lws, 0, int(lws["spec"]["replicas"]))
    await case.steps(api, ns)


async def test_invalid_template_is_reported_not_fatal(api: KubeClient, ns: str) -> None:
    lws = LeaderWorkerSetBuilder(ns).leader_container_name("Not_A_DNS_Label").obj()
    await api.create(LEADERWORKERSETS, lws)
    await invalid_template_reported(api, ns)


async def test_revision_stores_the_hashed_bytes(api: KubeClient, ns: str) -> None:
    """The ControllerRevision's data is exactly the patch its key was hashed from, so a
    Go controller reading it computes the same key."""
    lws = await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).obj())
    revisions = await expect.expect_revisions(api, ns, 1)
    name = revisions[0]["metadata"]["name"]
    body = await api.transport.checked("GET", CONTROLLER_REVISIONS.object_path(ns, name))
    patch = revision_patch(lws)
    assert b'"data":' + patch in body, body[:600]
    assert revisions[0]["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] == hash_patch(patch)
    assert name == f"{NAME}-{hash_patch(patch)}-1"


def controller_revision(ns: str, name: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {},
        "revision": 1,
    }


async def test_a_statefulsets_own_revisions_stay_out_of_the_revision_cache(api: KubeClient, ns: str) -> None:
    """The StatefulSet controller makes a ControllerRevision per worker StatefulSet, labelled with
    the pod template's labels (our set name among them) and `controller.kubernetes.io/hash`. A set
    never reads them, so the cache does not hold them: at 2,500 groups they were 2,500 whole pod
    templates scanned on every round."""
    await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).obj())
    ours = await expect.expect_revisions(api, ns, 1)
    await processed.expect_revision_cached(api, ns, ours[0]["metadata"]["name"])
    history = {c.LABEL_SET_NAME: NAME, c.LABEL_GROUP_INDEX: "0", "controller.kubernetes.io/hash": "5d8f7c"}
    await api.create(CONTROLLER_REVISIONS, controller_revision(ns, f"{NAME}-0-5d8f7c", history), ns)
    # A revision the cache does select, created after it: once it is cached, the watch is past both.
    await api.create(CONTROLLER_REVISIONS, controller_revision(ns, "probe", {c.LABEL_SET_NAME: "other"}), ns)
    await processed.expect_revision_cached(api, ns, "probe")
    assert not processed.revision_cached(ns, f"{NAME}-0-5d8f7c")


async def test_creation_is_announced_once(api: KubeClient, ns: str) -> None:
    """Reconciles that run before the watch shows our own writes must not redo them: one revision,
    one leader StatefulSet creation, one worker StatefulSet per leader (no event series either)."""
    lws = await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).obj())
    await kubelet.create_leader_pods(api, lws, 0, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await expect.expect_progressing(api, ns)

    async def announced_once(reason: str, note: str) -> None:
        await expect.expect_event(api, ns, reason, note)  # events are written asynchronously
        events = [e for e in await expect.events_with(api, ns, reason) if e["note"] == note]
        assert len(events) == 1, events
        assert events[0].get("series") is None, events

    await announced_once(c.EVENT_GROUPS_PROGRESSING, f"Created leader statefulset {NAME}")
    for i in range(2):
        await announced_once(
            c.EVENT_GROUPS_PROGRESSING, f"Created worker statefulset for leader pod {NAME}-{i}"
        )
        assert processed.creates("statefulsets", ns, f"{NAME}-{i}") == 1  # not even an AlreadyExists
    key = kubelet.current_revision_key(lws)
    await announced_once(
        c.EVENT_CREATING_REVISION, f"Creating revision with key {key} for a newly created LeaderWorkerSet"
    )
    await expect.expect_revisions(api, ns, 1)


async def test_an_unchanged_leader_statefulset_is_not_applied_again(api: KubeClient, ns: str) -> None:
    """No idle PATCH: a reconcile whose leader StatefulSet would come out the same as our last apply left
    it sends no PATCH; another writer's spec edit is applied over again, once."""
    lws = await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(2).obj())
    await expect.expect_valid_leader_statefulset(api, ns, 2)
    await kubelet.create_leader_pods(api, lws, 0, 2)
    await expect.expect_valid_worker_statefulsets(api, ns)
    await processed.expect_lws_processed(api, ns, NAME)
    applied = processed.applies("statefulsets", ns, NAME)
    assert applied >= 1

    for i in range(3):  # a leader pod event wakes the LWS: a reconcile that changes nothing
        leader = f"{NAME}-{i % 2}"
        touch = {"metadata": {"annotations": {"example.com/touched": str(i)}}}
        await api.merge_patch(PODS, ns, leader, touch)
        await processed.expect_pods_processed(api, ns, [leader])  # the LWS key is queued by then
        await processed.expect_lws_processed(api, ns, NAME)
    assert processed.applies("statefulsets", ns, NAME) == applied

    await api.merge_patch(STATEFULSETS, ns, NAME, {"spec": {"replicas": 5}})
    await expect.expect_valid_leader_statefulset(api, ns, 2)  # restored by one apply
    await processed.expect_lws_processed(api, ns, NAME)
    assert processed.applies("statefulsets", ns, NAME) == applied + 1


@pytest.mark.parametrize("leader_statefulset_gone", [False, True], ids=["sts-cached", "sts-collected"])
async def test_a_set_deleted_in_the_foreground_gets_no_revision_back_from_a_lagging_cache(
    api: KubeClient, ns: str, leader_statefulset_gone: bool
) -> None:
    """Found by the chaos suite's connection cuts: a set deleted in the foreground loses its
    ControllerRevisions to the garbage collector while it still exists. A round whose cached LWS lags
    behind (not deleting yet) but whose revision cache is current saw a missing revision and created
    it again. The round now reads the LWS fresh before creating a revision for a set that already has
    its leader StatefulSet, or a status (the chaos suite found the second case: the collector had
    taken the leader StatefulSet too, so the round looked like a new set's). The lag is made here by
    putting the pre-deletion LWS back into the cache."""
    await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(1).obj())
    await expect.expect_valid_leader_statefulset(api, ns, 1)
    await expect.expect_revisions(api, ns, 1)
    await processed.expect_lws_processed(api, ns, NAME)
    controllers = processed.RUNNING[-1]
    assert controllers.informers is not None
    assert controllers.leaderworkerset is not None
    informers, key = controllers.informers, ObjectKey(ns, NAME)
    stale = informers.lws.store.get(key)
    assert stale is not None

    # Foreground deletion; without a garbage collector here the test removes the revisions itself.
    await api.delete(LEADERWORKERSETS, ns, NAME, propagation=PROPAGATION_FOREGROUND)
    await processed.expect_lws_processed(api, ns, NAME)
    revisions = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    for revision in revisions:
        await api.delete(CONTROLLER_REVISIONS, ns, revision["metadata"]["name"])
    if leader_statefulset_gone:
        await api.delete(STATEFULSETS, ns, NAME)

    def revisions_gone_from_cache() -> bool:
        sts_gone = not leader_statefulset_gone or informers.statefulset(ns, NAME) is None
        return not informers.set_revisions(ns, NAME) and sts_gone

    await eventually(revisions_gone_from_cache)
    creates_before = _revision_creates(ns)

    informers.lws.store.upsert(stale)  # the LWS cache lags: the set looks live
    await controllers.leaderworkerset.process(key)

    assert _revision_creates(ns) == creates_before
    assert await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}") == []


def _revision_creates(ns: str) -> int:
    return sum(
        1
        for verb, plural, namespace, _ in processed.WRITES
        if (verb, plural, namespace) == ("create", "controllerrevisions", ns)
    )
