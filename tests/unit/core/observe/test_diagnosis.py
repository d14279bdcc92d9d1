"""Why a group is not ready: one cause per group, the most specific one wins."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import RETAINED_GROUP_REASON
from leaderworkerset.core.observe import diagnosis as d
from tests.support.builders import as_worker_of, cached_lws, leader_pod, worker_statefulset

Obj = dict[str, Any]
GPU_MESSAGE = "0/12 nodes are available: 12 Insufficient nvidia.com/gpu. preemption: 0/12 nodes are available"


def scheduled(pod: Obj, node: str = "kwok-node-0") -> Obj:
    pod["spec"]["nodeName"] = node
    return pod


def unscheduled(pod: Obj) -> Obj:
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending", "conditions": []}
    return pod


def worker(leader: Obj, index: int) -> Obj:
    pod = copy.deepcopy(leader)
    pod["metadata"]["name"] = f"{leader['metadata']['name']}-{index}"
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] = str(index)
    as_worker_of(pod, leader)
    pod["status"]["containerStatuses"] = [{"name": "worker", "restartCount": 0}]
    return pod


def with_container(pod: Obj, **status: Any) -> Obj:
    pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": 0, **status}]
    return pod


def leader(*, ready: bool = False, node: bool = True, **kwargs: Any) -> Obj:
    pod = leader_pod("lws", 0, "rev", ready=ready, phase="Running" if node else "Pending", **kwargs)
    return scheduled(pod) if node else unscheduled(pod)


def crash_looping(pod: Obj, last_reason: str = "Error", exit_code: int = 1) -> Obj:
    return with_container(
        pod,
        restartCount=7,
        state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting"}},
        lastState={"terminated": {"reason": last_reason, "exitCode": exit_code}},
    )


@dataclass(frozen=True)
class Case:
    leader: Obj | None
    workers: tuple[Obj, ...] = ()
    has_sts: bool = True
    foreign_sts: bool = False  # the worker-name StatefulSet has no controller
    sts_ready: bool = False
    size: int = 2
    spec: Obj = field(default_factory=dict)
    annotations: Obj = field(default_factory=dict)
    failures: Obj = field(default_factory=dict)
    want_cause: str | None = None
    want_message: str = ""


def _lws(case: Case) -> Obj:
    lws = cached_lws("lws").size(case.size).obj()
    lws["spec"].update(case.spec)
    lws["metadata"]["annotations"] = dict(case.annotations)
    return lws


def _of_revision(pod: Obj, revision: str) -> Obj:
    pod["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = revision
    return _of_the_replaced_statefulset(pod)


def _leaving(pod: Obj) -> Obj:
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return _of_the_replaced_statefulset(pod)


def _of_the_replaced_statefulset(pod: Obj) -> Obj:
    """A worker of the group's previous incarnation: its StatefulSet had another UID."""
    pod["metadata"]["ownerReferences"][0]["uid"] = "sts-uid-replaced"
    return pod


# Upstream main's whole-group rule: this incarnation's own worker does not exist yet.
_OWN_WORKER_MISSING = "worker pods missing: lws-0-1"


def _ready_worker(index: int) -> Obj:
    return scheduled(worker(leader(ready=True), index))


def _node_lost(pod: Obj, node: str) -> Obj:
    """What the node lifecycle controller leaves when a kubelet stops reporting: Ready False on the
    pod, the containers' last report (ready) untouched."""
    pod = scheduled(pod, node)
    pod["status"]["containerStatuses"] = [{"name": "worker", "restartCount": 0, "ready": True}]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return pod


def _unschedulable_condition(pod: Obj) -> Obj:
    """What the scheduler writes on the pod (the controller's caches have no events)."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": GPU_MESSAGE}
    pod.setdefault("status", {}).setdefault("conditions", []).append(condition)
    return pod


def _gated(pod: Obj, gate: str) -> Obj:
    pod["spec"]["schedulingGates"] = [{"name": gate}]
    return pod


def _gang(pod: Obj, *, workload: bool) -> Obj:
    if workload:
        pod["spec"]["schedulingGroup"] = {"podGroupName": "lws-0-pg"}
    else:
        pod["metadata"]["annotations"] = {c.ANNOTATION_SCHEDULING_GROUP_NAME: "lws-0-rev"}
    return pod


CASES = [
    pytest.param(
        Case(leader(ready=True), (_ready_worker(1),), sts_ready=True), id="ready-group-has-no-diagnosis"
    ),
    pytest.param(
        Case(None, want_cause=d.CAUSE_LEADER_MISSING, want_message="leader pod missing"), id="leader-missing"
    ),
    pytest.param(
        Case(
            crash_looping(leader(annotations={c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"})),
            want_cause=d.CAUSE_RESTART_BUDGET_EXHAUSTED,
            want_message=RETAINED_GROUP_REASON,
        ),
        id="exhausted-budget-beats-crash-loop",
    ),
    pytest.param(Case(leader(deleting=True), want_cause=d.CAUSE_LEADER_TERMINATING), id="leader-terminating"),
    pytest.param(
        Case(
            leader(),
            (crash_looping(scheduled(worker(leader(), 1)), exit_code=3),),
            want_cause=d.CAUSE_CRASH_LOOP,
            want_message="worker lws-0-1 container main CrashLoopBackOff (exit code 3, 7 restarts)",
        ),
        id="worker-crash-loop-with-exit-code-and-restarts",
    ),
    pytest.param(
        Case(
            crash_looping(leader(), last_reason="OOMKilled", exit_code=137),
            want_cause=d.CAUSE_OOM_KILLED,
            want_message="leader lws-0 container main OOMKilled (exit code 137, 7 restarts): "
            "raise its memory limit",
        ),
        id="oom-killed-beats-its-crash-loop",
    ),
    pytest.param(
        Case(
            with_container(
                leader(),
                image="registry.invalid/nope:1",
                state={"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}},
            ),
            want_cause=d.CAUSE_IMAGE_PULL,
            want_message="leader lws-0 container main ImagePullBackOff (registry.invalid/nope:1): "
            "Back-off pulling image",
        ),
        id="image-pull-back-off",
    ),
    pytest.param(
        Case(
            with_container(leader(), state={"waiting": {"reason": "ErrImagePull"}}),
            want_cause=d.CAUSE_IMAGE_PULL,
            want_message="leader lws-0 container main ErrImagePull",
        ),
        id="err-image-pull",
    ),
    pytest.param(
        Case(
            with_container(leader(), state={"terminated": {"reason": "Error", "exitCode": 2}}),
            want_cause=d.CAUSE_CONTAINER_FAILED,
            want_message="leader lws-0 container main terminated: Error (exit code 2)",
        ),
        id="container-exited-non-zero",
    ),
    pytest.param(
        Case(
            with_container(
                leader(), state={"waiting": {"reason": "RunContainerError", "message": "no such file"}}
            ),
            want_cause=d.CAUSE_CONTAINER_WAITING,
            want_message="leader lws-0 container main waiting: RunContainerError: no such file",
        ),
        id="container-waiting-for-another-reason",
    ),
    pytest.param(
        Case(
            with_container(leader(), state={"waiting": {"reason": "ContainerCreating"}}),
            (_ready_worker(1),),
            sts_ready=True,
            want_cause=d.CAUSE_NOT_READY,
            want_message="leader pod not ready",
        ),
        id="container-creating-is-not-a-problem",
    ),
    pytest.param(
        Case(
            leader(),
            (
                crash_looping(scheduled(worker(leader(), 1))),
                with_container(
                    scheduled(worker(leader(), 2)),
                    state={
                        "waiting": {"reason": "CreateContainerConfigError", "message": 'secret "s" not found'}
                    },
                ),
            ),
            want_cause=d.CAUSE_CONFIG_ERROR,
            want_message='worker lws-0-2 container main CreateContainerConfigError: secret "s" not found',
        ),
        id="config-error-in-a-later-pod-beats-an-earlier-pods-crash-loop",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (unscheduled(worker(leader(), 1)),),
            failures={"uid-lws-0-1": GPU_MESSAGE},
            want_cause=d.CAUSE_FAILED_SCHEDULING,
            want_message=f"worker lws-0-1 unschedulable: {GPU_MESSAGE}",
        ),
        id="failed-scheduling-names-the-schedulers-message",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (_unschedulable_condition(unscheduled(worker(leader(), 1))),),
            want_cause=d.CAUSE_FAILED_SCHEDULING,
            want_message=f"worker lws-0-1 unschedulable: {GPU_MESSAGE}",
        ),
        id="without-events-the-pods-PodScheduled-condition-gives-the-message",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (unscheduled(worker(leader(), 1)),),
            failures={"uid-of-an-older-pod": GPU_MESSAGE},
            want_cause=d.CAUSE_UNSCHEDULED,
            want_message="worker lws-0-1 Pending, not scheduled yet",
        ),
        id="failures-of-another-pod-uid-are-not-this-pods",
    ),
    pytest.param(
        Case(
            _gated(leader(node=False), c.SCHEDULING_GATE_GROUP_REPLACEMENT),
            size=1,
            want_cause=d.CAUSE_REPLACEMENT_GATE,
            want_message="leader lws-0 held at the group-replacement gate "
            "until the group it replaces is gone",
        ),
        id="hash-leader-at-the-replacement-gate",
    ),
    pytest.param(
        Case(
            _gated(leader(node=False), "example.com/quota"),
            size=1,
            want_cause=d.CAUSE_SCHEDULING_GATE,
            want_message="leader lws-0 held by scheduling gate example.com/quota",
        ),
        id="other-scheduling-gate",
    ),
    pytest.param(
        Case(
            _gang(leader(node=False), workload=True),
            (_gang(unscheduled(worker(leader(), 1)), workload=True),),
            want_cause=d.CAUSE_GANG_WAIT,
            want_message="leader lws-0 waits for its gang (PodGroup lws-0-pg) to be scheduled",
        ),
        id="workload-api-gang-wait",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (_gang(unscheduled(worker(leader(), 1)), workload=False),),
            want_cause=d.CAUSE_GANG_WAIT,
            want_message="worker lws-0-1 waits for its gang (PodGroup lws-0-rev) to be scheduled",
        ),
        id="volcano-gang-wait",
    ),
    pytest.param(
        Case(
            _gang(leader(node=False), workload=True),
            failures={"uid-lws-0": GPU_MESSAGE},
            has_sts=False,
            want_cause=d.CAUSE_FAILED_SCHEDULING,
        ),
        id="schedulers-message-beats-the-gang-wait",
    ),
    pytest.param(
        Case(
            leader(),
            has_sts=False,
            spec={"startupPolicy": c.STARTUP_POLICY_LEADER_READY},
            want_cause=d.CAUSE_WAIT_LEADER_READY,
            want_message="workers not created until the leader is ready (startupPolicy LeaderReady)",
        ),
        id="leader-ready-startup-wait",
    ),
    pytest.param(
        Case(
            leader(node=False),
            has_sts=False,
            annotations={c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "topology.kubernetes.io/zone"},
            want_cause=d.CAUSE_WAIT_LEADER_SCHEDULED,
            want_message="workers wait for the leader to be scheduled "
            "(exclusive topology topology.kubernetes.io/zone)",
        ),
        id="exclusive-topology-waits-for-the-leader",
    ),
    pytest.param(
        Case(leader(ready=True), has_sts=False, want_cause=d.CAUSE_WORKERS_MISSING),
        id="worker-statefulset-missing",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            foreign_sts=True,
            want_cause=d.CAUSE_FOREIGN_WORKERS,
            want_message="statefulset lws-0 holds the worker name, but the leader does not control it",
        ),
        id="worker-name-held-by-a-statefulset-we-did-not-make",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (_of_revision(crash_looping(worker(leader(), 1)), "old"),),
            sts_ready=True,
            want_cause=d.CAUSE_NOT_READY,
            want_message=_OWN_WORKER_MISSING,
        ),
        id="a-worker-of-the-replaced-incarnation-is-not-this-groups",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (_leaving(crash_looping(worker(leader(), 1))),),
            sts_ready=True,
            want_cause=d.CAUSE_NOT_READY,
            want_message=_OWN_WORKER_MISSING,
        ),
        id="a-worker-on-its-way-out-is-not-this-groups",
    ),
    pytest.param(
        Case(leader(ready=True), size=1, has_sts=False),
        id="size-one-ready-leader-needs-no-workers",
    ),
    pytest.param(
        Case(
            leader(),
            (_ready_worker(1),),
            sts_ready=True,
            want_cause=d.CAUSE_NOT_READY,
            want_message="leader pod not ready",
        ),
        id="running-but-not-ready-falls-back-to-the-group-reasons",
    ),
    pytest.param(
        Case(
            leader(ready=True),
            (_node_lost(worker(leader(ready=True), 1), "real-node-2"),),
            want_cause=d.CAUSE_NODE_NOT_READY,
            want_message="worker lws-0-1 marked not ready: node real-node-2 stopped reporting "
            "(kubelet down or unreachable)",
        ),
        id="a-pod-whose-node-stopped-reporting-names-the-node",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_diagnose_group(case: Case) -> None:
    sts = None
    if case.has_sts and case.size > 1 and case.leader is not None:
        sts = worker_statefulset(case.leader, ready=case.sts_ready, replicas=case.size - 1)
        if case.foreign_sts:
            sts["metadata"]["ownerReferences"] = []
    pods = ([case.leader] if case.leader else []) + list(case.workers)
    got = d.diagnose_group(
        lws=_lws(case), leader=case.leader, worker_sts=sts, pods=pods, failures=case.failures
    )
    if case.want_cause is None:
        assert got is None
        return
    assert got is not None
    assert got.cause == case.want_cause
    if case.want_message:
        assert got.message == case.want_message


def test_every_cause_has_a_case() -> None:
    assert len(CASES) == 29
    causes = {value for key, value in vars(d).items() if key.startswith("CAUSE_")}
    covered = {p.values[0].want_cause for p in CASES}
    assert causes <= covered, f"causes without a case: {causes - covered}"


def _event(
    uid: str, message: str, when: str, *, reason: str = d.EVENT_FAILED_SCHEDULING, new_api: bool = False
) -> Obj:
    if new_api:
        return {
            "reason": reason,
            "note": message,
            "regarding": {"kind": "Pod", "uid": uid},
            "eventTime": when,
        }
    return {
        "reason": reason,
        "message": message,
        "involvedObject": {"kind": "Pod", "uid": uid},
        "lastTimestamp": when,
    }


def test_scheduling_failures_keep_the_latest_message_per_pod_uid() -> None:
    events = [
        _event("a", "0/4 nodes are available: 4 Insufficient cpu.", "2026-12-01T10:00:02Z"),
        _event("a", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "2026-12-01T10:00:05Z"),
        _event("a", "older, listed later", "2026-12-01T10:00:01Z"),
        _event(
            "b",
            "0/4 nodes are available: 4 node(s) had untolerated taint.",
            "2026-12-01T10:00:00Z",
            new_api=True,
        ),
        _event("c", "Successfully assigned", "2026-12-01T10:00:09Z", reason="Scheduled"),
    ]
    assert d.scheduling_failures(events) == {
        "a": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        "b": "0/4 nodes are available: 4 node(s) had untolerated taint.",
    }
