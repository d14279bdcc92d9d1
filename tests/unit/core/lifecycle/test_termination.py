"""podTerminationPolicy Parallel (KEP-956): which worker StatefulSet a terminating
leader takes with it, and the leader template annotation."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.lifecycle.termination import (
    is_parallel_termination,
    leader_template_termination_annotations,
    lingering_worker_pod,
    worker_statefulset_to_delete,
    worker_statefulsets_to_delete_with_lws,
)
from tests.support.builders import cached_lws, leader_pod, leader_sts, worker_statefulset

PARALLEL, DEFAULT = c.POD_TERMINATION_POLICY_PARALLEL, c.POD_TERMINATION_POLICY_DEFAULT
PARALLEL_ANNOTATION = {c.ANNOTATION_POD_TERMINATION_POLICY: PARALLEL}


def lws(policy: str | None) -> dict[str, Any]:
    builder = cached_lws("lws")
    if policy is not None:
        builder.spec_field("podTerminationPolicy", policy)
    return builder.obj()


def leader(*, deleting: bool = True, uid: str = "leader-uid", annotated: bool = False) -> dict[str, Any]:
    annotations = PARALLEL_ANNOTATION if annotated else None
    return leader_pod("lws", 0, "rev", uid=uid, deleting=deleting, annotations=annotations)


def sts_of(owner: dict[str, Any], *, deleting: bool = False) -> dict[str, Any]:
    sts = worker_statefulset(owner)
    if deleting:
        sts["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return sts


@dataclass(frozen=True)
class Case:
    lws: dict[str, Any] | None
    leader: dict[str, Any]
    sts: dict[str, Any] | None
    want_delete: bool


CASES = [
    # Upstream's pod controller cases first (KEP-956 "Pod Controller Changes").
    pytest.param(
        Case(lws(PARALLEL), leader(), sts_of(leader()), True), id="Parallel deleting leader: delete"
    ),
    pytest.param(
        Case(lws(DEFAULT), leader(), sts_of(leader()), False), id="Default deleting leader: GC's job"
    ),
    pytest.param(
        Case(None, leader(annotated=True), sts_of(leader()), True), id="LWS gone, leader annotated Parallel"
    ),
    pytest.param(
        Case(lws(DEFAULT), leader(annotated=True), sts_of(leader()), True),
        id="annotation alone is enough (policy changed after the leader was made)",
    ),
    pytest.param(Case(None, leader(), sts_of(leader()), False), id="LWS gone, no annotation"),
    pytest.param(
        Case(lws(PARALLEL), leader(deleting=False), sts_of(leader()), False), id="leader not terminating"
    ),
    pytest.param(Case(lws(PARALLEL), leader(), None, False), id="no worker StatefulSet"),
    pytest.param(
        Case(lws(PARALLEL), leader(), sts_of(leader(), deleting=True), False),
        id="worker StatefulSet already going",
    ),
    pytest.param(
        Case(lws(PARALLEL), leader(uid="old-leader"), sts_of(leader(uid="new-leader")), False),
        id="same-named StatefulSet of another leader UID survives",
    ),
    pytest.param(Case(lws(None), leader(), sts_of(leader()), False), id="unset policy behaves as Default"),
]


@pytest.mark.parametrize("case", CASES)
def test_worker_statefulset_to_delete(case: Case) -> None:
    got = worker_statefulset_to_delete(case.lws, case.leader, case.sts)
    assert (got is not None) == case.want_delete
    if case.want_delete:
        assert got is case.sts


def test_case_count() -> None:
    assert len(CASES) == 10


def test_a_statefulset_without_a_pod_controller_owner_is_never_deleted() -> None:
    sts = sts_of(leader())
    sts["metadata"]["ownerReferences"][0]["controller"] = False
    assert worker_statefulset_to_delete(lws(PARALLEL), leader(), sts) is None


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        pytest.param(PARALLEL, PARALLEL_ANNOTATION, id="Parallel annotates the leader template"),
        pytest.param(DEFAULT, {}, id="Default leaves the template as it was"),
        pytest.param(None, {}, id="unset leaves the template as it was"),
    ],
)
def test_leader_template_annotation(policy: str | None, want: dict[str, str]) -> None:
    assert leader_template_termination_annotations(lws(policy)) == want
    assert is_parallel_termination(lws(policy), leader(annotated=False)) == bool(want)


def deleting_lws(policy: str | None) -> dict[str, Any]:
    obj = lws(policy)
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


LWS_DELETION = [
    # Upstream's LWS controller case first (KEP-956 "Proactive LWS Deletion").
    pytest.param(
        deleting_lws(PARALLEL), ["lws-0", "lws-1"], id="terminating Parallel LWS: every worker StatefulSet"
    ),
    pytest.param(deleting_lws(DEFAULT), [], id="terminating Default LWS: garbage collection only"),
    pytest.param(lws(PARALLEL), [], id="live Parallel LWS: nothing"),
]


@pytest.mark.parametrize(("given", "want"), LWS_DELETION)
def test_worker_statefulsets_to_delete_with_lws(given: dict[str, Any], want: list[str]) -> None:
    going = sts_of(leader_pod("lws", 2, "rev", uid="leader-2"), deleting=True)
    workers = [sts_of(leader_pod("lws", i, "rev", uid=f"leader-{i}")) for i in (0, 1)]
    statefulsets = [leader_sts_of_lws(), *workers, going]
    got = worker_statefulsets_to_delete_with_lws(given, statefulsets)
    assert [s["metadata"]["name"] for s in got] == want


def leader_sts_of_lws() -> dict[str, Any]:
    """The leader StatefulSet: owned by the LWS, never a worker group."""
    sts = leader_sts("lws", replicas=3)
    owner = {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "name": "lws",
        "uid": "lws-uid",
        "controller": True,
    }
    sts["metadata"]["ownerReferences"] = [owner]
    return sts


def test_lws_deletion_case_count() -> None:
    assert len(LWS_DELETION) == 3


# ----- lingering_worker_pod: a predecessor's worker still holding a name ---------------
def old_worker(
    index: int, *, deleting: bool = False, owner_kind: str | None = "StatefulSet"
) -> dict[str, Any]:
    """Worker `lws-0-<index>` of the previous incarnation of group 0."""
    meta: dict[str, Any] = {"name": f"lws-0-{index}", "namespace": "default", "uid": f"old-{index}"}
    if owner_kind is not None:
        meta["ownerReferences"] = [
            {"kind": owner_kind, "name": "lws-0", "uid": "old-sts", "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


@dataclass(frozen=True)
class LingerCase:
    size: int
    cached: tuple[dict[str, Any], ...]
    want: str | None


LINGER_CASES = [
    pytest.param(LingerCase(3, (), None), id="no pod holds a worker name: create"),
    pytest.param(
        LingerCase(3, (old_worker(2, deleting=True),), "lws-0-2"), id="terminating worker holds its name"
    ),
    pytest.param(
        LingerCase(3, (old_worker(1),), "lws-0-1"),
        id="worker of the deleted StatefulSet, not yet collected: the garbage collector deletes it",
    ),
    pytest.param(
        LingerCase(3, (old_worker(1, owner_kind=None),), None),
        id="orphan worker: the new StatefulSet adopts it",
    ),
    pytest.param(
        LingerCase(3, (old_worker(1, owner_kind=None, deleting=True),), "lws-0-1"),
        id="terminating orphan still holds its name",
    ),
    pytest.param(
        LingerCase(2, (old_worker(2, deleting=True),), None),
        id="a pod beyond the group's size is not one of its names",
    ),
    pytest.param(LingerCase(1, (old_worker(1, deleting=True),), None), id="size 1 has no workers"),
]


@pytest.mark.parametrize("case", LINGER_CASES)
def test_lingering_worker_pod(case: LingerCase) -> None:
    by_name = {p["metadata"]["name"]: p for p in case.cached}
    got = lingering_worker_pod(leader_pod("lws", 0, "rev"), case.size, by_name.get)
    assert got == case.want


def test_lingering_case_count() -> None:
    assert len(LINGER_CASES) == 7
