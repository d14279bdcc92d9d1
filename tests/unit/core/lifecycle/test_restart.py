"""Group restart decisions and worker startup gates."""

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.lifecycle.restart import (
    GroupRestartError,
    RestartAction,
    RestartLookup,
    TopologyError,
    WorkerGate,
    check_group_pod,
    decide_restart,
    foreign_worker_statefulset,
    foreign_worker_statefulset_event,
    group_pending,
    misannotated_leader_event,
    orphaned_workers,
    placement_gate,
    replay_deleted_pod,
    restart_lookup,
    restart_triggered,
    startup_gate,
    topology_node_selector,
    worker_statefulset_created_event,
    worker_statefulset_failed_event,
)
from tests.support.builders import NS, LeaderWorkerSetBuilder, cached_lws, leader_pod, worker_statefulset

AFTER_START = c.RESTART_POLICY_RECREATE_GROUP_AFTER_START
ON_RESTART = c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART


def lws(policy: str = ON_RESTART, size: int = 3, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    builder = cached_lws("lws").size(size).restart_policy(policy)
    if annotations:
        builder.annotations(annotations)
    return builder.obj()


def leader(*, uid: str = "leader-uid-1", revision: str = "rev", **kwargs: Any) -> dict[str, Any]:
    return leader_pod("lws", 0, revision, uid=uid, **kwargs)


def worker(
    owner_leader: dict[str, Any],
    index: int = 1,
    *,
    sts_uid: str | None = None,
    revision: str = "rev",
    phase: str = "Running",
    restart_count: int = 0,
    init_restart_count: int = 0,
    deleting: bool = False,
    leader_name_annotation: bool = True,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A worker pod of `owner_leader`'s worker StatefulSet."""
    leader_name = owner_leader["metadata"]["name"]
    labels = {
        c.LABEL_SET_NAME: "lws",
        c.LABEL_WORKER_INDEX: str(index),
        c.LABEL_GROUP_INDEX: owner_leader["metadata"]["labels"][c.LABEL_GROUP_INDEX],
        c.LABEL_TEMPLATE_REVISION_HASH: revision,
    }
    meta: dict[str, Any] = {
        "name": f"{leader_name}-{index}",
        "namespace": NS,
        "uid": f"worker-uid-{index}",
        "labels": labels,
        "annotations": {c.ANNOTATION_LEADER_NAME: leader_name} if leader_name_annotation else {},
        "ownerReferences": [
            owner
            or {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": leader_name,
                "uid": sts_uid or f"sts-uid-{leader_name}",
                "controller": True,
            }
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "initContainerStatuses": [{"name": "init", "restartCount": init_restart_count}],
            "containerStatuses": [{"name": "worker", "restartCount": restart_count}],
        },
    }


def group_of(lead: dict[str, Any], *workers: dict[str, Any]) -> list[dict[str, Any]]:
    return [lead, *workers]


@pytest.mark.parametrize(
    ("policy", "pod_kwargs", "want"),
    [
        pytest.param(ON_RESTART, {"restart_count": 1}, True, id="container restarted"),
        pytest.param(ON_RESTART, {"init_restart_count": 2}, True, id="init container restarted"),
        pytest.param(
            ON_RESTART, {"restart_count": 1, "phase": "Pending"}, True, id="restarted while pending"
        ),
        pytest.param(
            ON_RESTART, {"restart_count": 1, "phase": "Failed"}, False, id="restart count of a failed pod"
        ),
        pytest.param(
            ON_RESTART, {"restart_count": 1, "phase": "Succeeded"}, False, id="restart count of a done pod"
        ),
        pytest.param(ON_RESTART, {"deleting": True}, True, id="pod deleted"),
        pytest.param(ON_RESTART, {}, False, id="healthy pod"),
        pytest.param(AFTER_START, {"restart_count": 1}, True, id="after start policy also triggers"),
        pytest.param(c.RESTART_POLICY_NONE, {"restart_count": 1}, False, id="policy None never triggers"),
        pytest.param(
            c.RESTART_POLICY_DEPRECATED_DEFAULT, {"deleting": True}, False, id="policy Default never triggers"
        ),
    ],
)
def test_restart_triggered(policy: str, pod_kwargs: dict[str, Any], want: bool) -> None:
    assert restart_triggered(lws(policy), worker(leader(), **pod_kwargs)) is want


@pytest.mark.parametrize(
    ("phases", "size", "want"),
    [
        pytest.param(["Running", "Running", "Running"], 3, False, id="all running"),
        pytest.param(["Running", "Pending", "Running"], 3, True, id="one pending"),
        pytest.param(["Running", "Running"], 3, True, id="a pod missing"),
        pytest.param(["Running"] * 4, 3, True, id="an extra pod (terminating one of a previous group)"),
        pytest.param(["Failed", "Running", "Running"], 3, False, id="failed is not pending"),
    ],
)
def test_group_pending(phases: list[str], size: int, want: bool) -> None:
    assert group_pending([{"status": {"phase": p}} for p in phases], size) is want


# --- decide_restart ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestartCase:
    lws: dict[str, Any]
    pod: dict[str, Any]
    want_action: RestartAction
    group: list[dict[str, Any]] = field(default_factory=list)
    leader: dict[str, Any] | None = None
    owner_sts: dict[str, Any] | None = None
    want_reason: str = ""


LEADER = leader()
CURRENT_STS = worker_statefulset(LEADER)
RUNNING_GROUP = group_of(LEADER, worker(LEADER, 1), worker(LEADER, 2))


def _case(
    pod: dict[str, Any],
    want: RestartAction,
    reason: str,
    *,
    policy: str = ON_RESTART,
    annotations: dict[str, str] | None = None,
    group: list[dict[str, Any]] | None = None,
    leader_obj: dict[str, Any] | None = LEADER,
    owner_sts: dict[str, Any] | None = CURRENT_STS,
) -> RestartCase:
    return RestartCase(
        lws(policy, annotations=annotations),
        pod,
        want,
        RUNNING_GROUP if group is None else group,
        leader_obj,
        owner_sts,
        reason,
    )


DELETE, NONE, DELETING = RestartAction.DELETE_LEADER, RestartAction.NONE, RestartAction.LEADER_DELETING
PENDING_GROUP = group_of(LEADER, worker(LEADER, 1, restart_count=1), worker(LEADER, 2, phase="Pending"))

RESTART_CASES = [
    pytest.param(
        _case(worker(LEADER, restart_count=1), DELETE, "group failure"), id="worker restart recreates"
    ),
    pytest.param(
        _case(worker(LEADER, deleting=True), DELETE, "group failure"), id="worker deletion recreates"
    ),
    pytest.param(
        _case(leader(restart_count=1), DELETE, "group failure", leader_obj=None, owner_sts=None),
        id="leader's own restart deletes itself",
    ),
    pytest.param(_case(worker(LEADER), NONE, "no restart trigger"), id="healthy worker"),
    pytest.param(
        _case(worker(LEADER, restart_count=1), NONE, "no restart trigger", policy=c.RESTART_POLICY_NONE),
        id="policy None",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            NONE,
            "group still starting",
            policy=AFTER_START,
            group=PENDING_GROUP,
        ),
        id="after start: a pending pod defers",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            NONE,
            "group still starting",
            policy=AFTER_START,
            group=group_of(LEADER, worker(LEADER, 1)),
        ),
        id="after start: a missing pod counts as pending",
    ),
    pytest.param(
        _case(worker(LEADER, restart_count=1), DELETE, "group failure", policy=AFTER_START),
        id="after start: acts once every pod has started",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            NONE,
            "group still starting",
            annotations={c.ANNOTATION_EXPERIMENTAL_RECREATE_GROUP_AFTER_START: ""},
            group=PENDING_GROUP,
        ),
        id="legacy annotation (empty value) behaves like after start",
    ),
    pytest.param(
        _case(worker(LEADER, restart_count=1), DELETE, "group failure", group=PENDING_GROUP),
        id="on pod restart ignores pending pods",
    ),
    pytest.param(
        _case(worker(LEADER, restart_count=1), NONE, "leader not found", leader_obj=None),
        id="leader already gone",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1, revision="old"),
            NONE,
            "worker from another revision than its leader",
        ),
        id="stale worker of another revision",
    ),
    pytest.param(
        _case(
            worker(LEADER, deleting=True, sts_uid="sts-uid-previous"),
            NONE,
            "worker from a previous incarnation of the group",
        ),
        id="deleted worker of a previous worker statefulset (same name, new UID)",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            NONE,
            "worker from a previous incarnation of the group",
            owner_sts=worker_statefulset(leader(uid="leader-uid-0")),
        ),
        id="worker statefulset owned by a previous leader",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            NONE,
            "worker from a previous incarnation of the group",
            owner_sts=None,
        ),
        id="worker statefulset already gone",
    ),
    pytest.param(
        _case(
            worker(
                LEADER,
                restart_count=1,
                owner={"kind": "Pod", "name": "lws-0", "uid": "leader-uid-1", "controller": True},
            ),
            DELETE,
            "group failure",
        ),
        id="worker owned directly by its leader",
    ),
    pytest.param(
        _case(
            worker(
                LEADER,
                restart_count=1,
                owner={"kind": "Pod", "name": "lws-0", "uid": "leader-uid-0", "controller": True},
            ),
            NONE,
            "worker from a previous incarnation of the group",
        ),
        id="worker owned directly by a previous leader",
    ),
    pytest.param(
        _case(
            worker(
                LEADER,
                restart_count=1,
                owner={"kind": "ReplicaSet", "name": "x", "uid": "u", "controller": True},
            ),
            NONE,
            "worker from a previous incarnation of the group",
        ),
        id="worker owned by something else",
    ),
    pytest.param(
        _case(
            worker(LEADER, restart_count=1),
            DELETING,
            "leader already deleting",
            leader_obj=leader(deleting=True),
        ),
        id="leader already deleting: done, no second delete",
    ),
    pytest.param(
        _case(leader(deleting=True), DELETING, "leader already deleting", leader_obj=None, owner_sts=None),
        id="deleting leader (scale down) stops here",
    ),
]


@pytest.mark.parametrize("case", RESTART_CASES)
def test_decide_restart(case: RestartCase) -> None:
    decision = decide_restart(
        case.lws, case.pod, group_pods=case.group, leader=case.leader, owner_statefulset=case.owner_sts
    )
    assert (decision.action, decision.reason) == (case.want_action, case.want_reason)
    assert decision.stop is (case.want_action is not RestartAction.NONE)


def test_delete_decision_names_leader_uid_and_event() -> None:
    decision = decide_restart(
        lws(),
        worker(LEADER, 2, deleting=True),
        group_pods=RUNNING_GROUP,
        leader=LEADER,
        owner_statefulset=CURRENT_STS,
    )
    assert (decision.leader_name, decision.leader_uid) == ("lws-0", "leader-uid-1")
    assert decision.event is not None
    assert (decision.event.type, decision.event.reason, decision.event.action) == (
        c.EVENT_TYPE_NORMAL,
        c.EVENT_RECREATE_GROUP,
        c.EVENT_ACTION_DELETE,
    )
    assert decision.event.message == "Worker pod lws-0-2 failed, deleted leader pod lws-0 to recreate group 0"


def test_event_says_worker_pod_even_for_the_leader() -> None:
    decision = decide_restart(lws(), leader(restart_count=1), group_pods=RUNNING_GROUP)
    assert decision.event is not None
    assert decision.event.message == "Worker pod lws-0 failed, deleted leader pod lws-0 to recreate group 0"


def test_a_failure_recreates_the_group_exactly_once() -> None:
    """A worker is deleted; the StatefulSet re-creates it before we look; we delete the leader once.
    Later events of the old group, and a replay of the old deletion after the group was rebuilt
    under the same names, change nothing."""
    spec = lws()
    deleted_snapshot = worker(LEADER, 1, deleting=True)
    recreated = worker(LEADER, 1)  # same name, new pod, same worker StatefulSet
    first = decide_restart(
        spec,
        deleted_snapshot,
        group_pods=group_of(LEADER, recreated, worker(LEADER, 2)),
        leader=LEADER,
        owner_statefulset=CURRENT_STS,
    )
    assert first.action is RestartAction.DELETE_LEADER

    deleting_leader = leader(deleting=True)
    again = decide_restart(
        spec,
        deleted_snapshot,
        group_pods=RUNNING_GROUP,
        leader=deleting_leader,
        owner_statefulset=CURRENT_STS,
    )
    assert again.action is RestartAction.LEADER_DELETING

    new_leader = leader(uid="leader-uid-2")
    new_sts = worker_statefulset(new_leader, uid="sts-uid-2")
    replay = decide_restart(
        spec,
        deleted_snapshot,
        group_pods=group_of(new_leader, worker(new_leader, 1, sts_uid="sts-uid-2")),
        leader=new_leader,
        owner_statefulset=new_sts,
    )
    assert replay.action is RestartAction.NONE
    healthy = decide_restart(
        spec, worker(new_leader, 1, sts_uid="sts-uid-2"), leader=new_leader, owner_statefulset=new_sts
    )
    assert healthy.action is RestartAction.NONE


# --- restart_lookup ---------------------------------------------------------------------------------


def test_restart_lookup_none_without_trigger() -> None:
    assert restart_lookup(lws(), worker(LEADER)) is None


def test_restart_lookup_for_worker() -> None:
    assert restart_lookup(lws(), worker(LEADER, 2, restart_count=1)) == RestartLookup(
        {c.LABEL_SET_NAME: "lws", c.LABEL_GROUP_INDEX: "0"}, "lws-0", "lws-0"
    )


def test_restart_lookup_for_leader() -> None:
    assert restart_lookup(lws(), leader(restart_count=1)) == RestartLookup(
        {c.LABEL_SET_NAME: "lws", c.LABEL_GROUP_INDEX: "0"}, "lws-0", None
    )


def test_restart_lookup_falls_back_to_the_pod_name() -> None:
    pod = worker(LEADER, 3, restart_count=1, leader_name_annotation=False)
    lookup = restart_lookup(lws(), pod)
    assert lookup is not None
    assert lookup.leader_name == "lws-0"


def test_restart_lookup_rejects_unparsable_worker_name() -> None:
    pod = worker(LEADER, restart_count=1, leader_name_annotation=False)
    pod["metadata"]["name"] = "not-an-ordinal"
    with pytest.raises(GroupRestartError, match=r"^parsing pod name for pod not-an-ordinal$"):
        restart_lookup(lws(), pod)


# --- worker startup -----------------------------------------------------------------------------------


def _ready_leader(ready: bool, containers: bool | None = None) -> dict[str, Any]:
    pod = leader()
    pod["status"]["conditions"] = [
        {"type": "Ready", "status": "True" if ready else "False"},
        {
            "type": "ContainersReady",
            "status": "True" if (ready if containers is None else containers) else "False",
        },
    ]
    return pod


@pytest.mark.parametrize(
    ("builder", "pod", "want"),
    [
        pytest.param(
            cached_lws().size(1), _ready_leader(False), WorkerGate.NO_WORKERS, id="size 1 has no workers"
        ),
        pytest.param(cached_lws().size(2), _ready_leader(False), WorkerGate.PROCEED, id="leader created"),
        pytest.param(
            cached_lws().size(2).startup_policy(c.STARTUP_POLICY_LEADER_READY),
            _ready_leader(False),
            WorkerGate.WAIT_LEADER_READY,
            id="leader ready: waits",
        ),
        pytest.param(
            cached_lws().size(2).startup_policy(c.STARTUP_POLICY_LEADER_READY),
            _ready_leader(True)
            | {"status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "True"}]}},
            WorkerGate.PROCEED,
            id="leader ready: PodReady only, phase not checked",
        ),
    ],
)
def test_startup_gate(builder: LeaderWorkerSetBuilder, pod: dict[str, Any], want: WorkerGate) -> None:
    assert startup_gate(builder.obj(), pod) is want


@pytest.mark.parametrize(
    ("ready", "containers", "want"),
    [
        pytest.param(False, True, WorkerGate.PROCEED, id="containers ready is enough"),
        pytest.param(True, False, WorkerGate.WAIT_LEADER_READY, id="pod ready is not enough"),
    ],
)
def test_startup_gate_hash_identity_uses_containers_ready(
    ready: bool, containers: bool, want: WorkerGate
) -> None:
    spec = cached_lws().size(2).startup_policy(c.STARTUP_POLICY_LEADER_READY).obj()
    spec["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    assert startup_gate(spec, _ready_leader(ready, containers)) is want


@pytest.mark.parametrize(
    ("annotations", "node", "want"),
    [
        pytest.param({}, None, WorkerGate.PROCEED, id="no exclusive placement"),
        pytest.param(
            {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "pool"}, None, WorkerGate.WAIT_LEADER_SCHEDULED, id="unbound"
        ),
        pytest.param(
            {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: ""}, None, WorkerGate.WAIT_LEADER_SCHEDULED, id="empty key"
        ),
        pytest.param({c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "pool"}, "node-1", WorkerGate.PROCEED, id="bound"),
    ],
)
def test_placement_gate(annotations: dict[str, str], node: str | None, want: WorkerGate) -> None:
    pod = copy.deepcopy(LEADER)
    if node:
        pod["spec"]["nodeName"] = node
    assert placement_gate(cached_lws().size(2).annotations(annotations).obj(), pod) is want


def test_topology_node_selector() -> None:
    node = {"metadata": {"name": "n", "labels": {"pool": "a"}}}
    assert topology_node_selector(node, "pool") == {"pool": "a"}
    with pytest.raises(TopologyError, match=r"^node does not have topology label: zone$"):
        topology_node_selector(node, "zone")


def test_misannotated_leader_event() -> None:
    assert misannotated_leader_event(lws(), LEADER) is None
    pod = leader(annotations={c.ANNOTATION_LEADER_NAME: "lws-0"})
    event = misannotated_leader_event(lws(), pod)
    assert event is not None
    assert (event.type, event.reason) == (c.EVENT_TYPE_WARNING, c.EVENT_FAILED_CREATE)
    assert event.message == (
        "leader pod default/lws-0 contains mistake annotation 'leaderworkerset.sigs.k8s.io/leader-name': "
        "requires Kubernetes ≥v1.27 or v1.26 with StatefulSetStartOrdinal feature"
    )


def test_worker_statefulset_events() -> None:
    assert (
        worker_statefulset_created_event(LEADER).message == "Created worker statefulset for leader pod lws-0"
    )
    failed = worker_statefulset_failed_event(LEADER, "boom")
    assert (failed.type, failed.message) == (
        c.EVENT_TYPE_WARNING,
        "Failed to create worker statefulset for leader pod lws-0: boom",
    )


@pytest.mark.parametrize(
    ("labels", "want_error"),
    [
        pytest.param({c.LABEL_SET_NAME: "lws", c.LABEL_WORKER_INDEX: "0"}, None, id="labelled"),
        pytest.param(
            {c.LABEL_SET_NAME: "lws", c.LABEL_WORKER_INDEX: ""}, None, id="empty worker index is present"
        ),
        pytest.param(
            {c.LABEL_WORKER_INDEX: "1"},
            "leaderworkerset.sigs.k8s.io/name label is unexpected missing",
            id="no name",
        ),
        pytest.param(
            {c.LABEL_SET_NAME: "", c.LABEL_WORKER_INDEX: "1"},
            "leaderworkerset.sigs.k8s.io/name label is unexpected missing",
            id="empty name",
        ),
        pytest.param(
            {c.LABEL_SET_NAME: "lws"},
            "leaderworkerset.sigs.k8s.io/worker-index label is unexpected missing",
            id="no worker index",
        ),
    ],
)
def test_check_group_pod(labels: dict[str, str], want_error: str | None) -> None:
    pod = {"metadata": {"name": "p", "labels": labels}}
    if want_error is None:
        check_group_pod(pod)
        return
    with pytest.raises(GroupRestartError) as err:
        check_group_pod(pod)
    assert str(err.value) == want_error


def test_replay_deleted_pod() -> None:
    assert replay_deleted_pod(worker(LEADER, deleting=True))
    assert not replay_deleted_pod(leader(deleting=True))


ORPHAN_LEADER = leader()
CURRENT_WORKERS = worker_statefulset(ORPHAN_LEADER, uid="sts-new")


@pytest.mark.parametrize(
    ("pod", "want_orphan"),
    [
        pytest.param(worker(ORPHAN_LEADER, sts_uid="sts-new"), False, id="owned-by-the-current-statefulset"),
        pytest.param(worker(ORPHAN_LEADER, sts_uid="sts-old"), True, id="owned-by-a-gone-namesake"),
        pytest.param(worker(ORPHAN_LEADER, sts_uid="sts-old", deleting=True), False, id="already-leaving"),
        pytest.param(ORPHAN_LEADER, False, id="the-leader-is-owned-by-the-leader-statefulset"),
        pytest.param(
            worker(
                ORPHAN_LEADER, owner={"kind": "StatefulSet", "name": "other", "uid": "x", "controller": True}
            ),
            False,
            id="another-statefulset-by-name",
        ),
    ],
)
def test_orphaned_workers(pod: dict[str, Any], want_orphan: bool) -> None:
    assert orphaned_workers(CURRENT_WORKERS, [pod]) == ([pod] if want_orphan else [])


def _controlled_by(workers: dict[str, Any], owner: dict[str, Any] | None) -> dict[str, Any]:
    body = copy.deepcopy(workers)
    body["metadata"]["ownerReferences"] = [owner] if owner else []
    return body


FOREIGN_CASES = [
    pytest.param(CURRENT_WORKERS, False, id="ours-controlled-by-the-leader"),
    pytest.param(
        worker_statefulset(leader(uid="old-leader-uid")), False, id="a-predecessor-leader-of-that-name"
    ),
    pytest.param(_controlled_by(CURRENT_WORKERS, None), True, id="no-controller"),
    pytest.param(
        _controlled_by(CURRENT_WORKERS, {"kind": "Pod", "name": "other-0", "uid": "x", "controller": True}),
        True,
        id="another-pod",
    ),
    pytest.param(
        _controlled_by(
            CURRENT_WORKERS, {"kind": "LeaderWorkerSet", "name": "lws-0", "uid": "x", "controller": True}
        ),
        True,
        id="not-a-pod",
    ),
    pytest.param(
        _controlled_by(CURRENT_WORKERS, {"kind": "Pod", "name": "lws-0", "uid": "x", "controller": False}),
        True,
        id="an-owner-that-is-not-the-controller",
    ),
]


@pytest.mark.parametrize(("workers", "want_foreign"), FOREIGN_CASES)
def test_foreign_worker_statefulset(workers: dict[str, Any], want_foreign: bool) -> None:
    assert foreign_worker_statefulset(workers, ORPHAN_LEADER) is want_foreign


def test_foreign_worker_cases_run() -> None:
    assert len(FOREIGN_CASES) == 6


def test_foreign_worker_statefulset_event_names_the_object_the_group_and_its_controller() -> None:
    owner = {"kind": "Deployment", "name": "someone", "uid": "x", "controller": True}
    event = foreign_worker_statefulset_event(_controlled_by(CURRENT_WORKERS, owner), ORPHAN_LEADER)
    assert (event.type, event.reason, event.related) == (
        c.EVENT_TYPE_WARNING,
        c.EVENT_FOREIGN_WORKER_STATEFULSET,
        ("Pod", "lws-0"),
    )
    assert event.message == (
        "StatefulSet lws-0 has the name of group 0's worker StatefulSet but leader pod lws-0 does not"
        " control it (controller: Deployment/someone): the group gets no workers until it is removed"
    )
    bare = foreign_worker_statefulset_event(_controlled_by(CURRENT_WORKERS, None), ORPHAN_LEADER)
    assert "(controller: none)" in bare.message
