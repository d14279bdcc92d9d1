"""Why one LeaderWorkerSet group is not ready, in one line.

`lws status` already reads the set, its pods and its worker StatefulSets; with the scheduler's
`FailedScheduling` events it has everything an operator would otherwise piece together from
`kubectl describe`. `diagnose_group` checks the causes from the most specific (a container that
cannot start, the scheduler's own words) to the most generic (a count of available workers), and
the first one found wins: one line that says what to fix, not a list of symptoms.

Pure: plain JSON dicts in, a `Diagnosis` out. The CLI shell does the reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import (
    RETAINED_GROUP_REASON,
    has_replacement_gate,
    is_exhausted,
    is_leader_pod,
    not_ready_reasons,
    pod_phase,
)
from leaderworkerset.core.lifecycle.restart import (
    WorkerGate,
    exclusive_topology_key,
    foreign_worker_statefulset,
    placement_gate,
    startup_gate,
)
from leaderworkerset.core.objects import (
    Obj,
    is_deleting,
    labels_of,
    lws_size,
    metadata,
    name_of,
    revision_key_of,
    uid_of,
)

# Kubernetes' own reasons (kubelet container states, the scheduler's event), not upstream lws strings.
EVENT_FAILED_SCHEDULING = "FailedScheduling"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
OOM_KILLED = "OOMKilled"
IMAGE_PULL_REASONS = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName")
CONFIG_ERROR_REASONS = ("CreateContainerConfigError", "CreateContainerError")
POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
# Waiting reasons of a container that is simply on its way up.
_STARTING_REASONS = ("ContainerCreating", "PodInitializing")


@dataclass(frozen=True)
class Diagnosis:
    """`cause` is a stable identifier for tools; `message` the one line an operator reads."""

    cause: str
    message: str


# Stable cause identifiers (the `cause` field of `lws status -o json`).
CAUSE_RESTART_BUDGET_EXHAUSTED = "RestartBudgetExhausted"
CAUSE_LEADER_MISSING = "LeaderPodMissing"
CAUSE_LEADER_TERMINATING = "LeaderPodTerminating"
CAUSE_CONFIG_ERROR = "ContainerConfigError"
CAUSE_IMAGE_PULL = "ImagePull"
CAUSE_OOM_KILLED = OOM_KILLED
CAUSE_CRASH_LOOP = CRASH_LOOP_BACK_OFF
CAUSE_CONTAINER_FAILED = "ContainerFailed"
CAUSE_CONTAINER_WAITING = "ContainerWaiting"
CAUSE_FAILED_SCHEDULING = EVENT_FAILED_SCHEDULING
CAUSE_REPLACEMENT_GATE = "GroupReplacementGate"
CAUSE_SCHEDULING_GATE = "SchedulingGate"
CAUSE_GANG_WAIT = "GangScheduling"
CAUSE_WAIT_LEADER_READY = "StartupPolicyLeaderReady"
CAUSE_WAIT_LEADER_SCHEDULED = "ExclusiveTopology"
CAUSE_WORKERS_MISSING = "WorkerStatefulSetMissing"
CAUSE_FOREIGN_WORKERS = "ForeignWorkerStatefulSet"
CAUSE_UNSCHEDULED = "Unscheduled"
CAUSE_NODE_NOT_READY = "NodeNotReady"
CAUSE_NOT_READY = "NotReady"


# --- events ------------------------------------------------------------------------------------


def _event_time(event: Obj) -> str:
    # RFC 3339 strings in UTC sort as times. core/v1 and events.k8s.io/v1 name the fields differently.
    series = event.get("series") or {}
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("deprecatedLastTimestamp"),
        metadata(event).get("creationTimestamp"),
    ):
        if value:
            return str(value)
    return ""


def scheduling_failures(events: Iterable[Obj]) -> dict[str, str]:
    """The latest `FailedScheduling` message per pod UID, from core/v1 or events.k8s.io/v1 events.

    Keyed by UID, not name: a recreated pod keeps its name, and its predecessor's failures are
    not its own.
    """
    latest: dict[str, tuple[str, str]] = {}
    for event in events:
        if event.get("reason") != EVENT_FAILED_SCHEDULING:
            continue
        regarding = event.get("involvedObject") or event.get("regarding") or {}
        uid = str(regarding.get("uid") or "")
        message = str(event.get("message") or event.get("note") or "").strip()
        if regarding.get("kind") != "Pod" or not uid or not message:
            continue
        when = _event_time(event)
        if uid not in latest or when >= latest[uid][0]:
            latest[uid] = (when, message)
    return {uid: message for uid, (_, message) in latest.items()}


# --- pods --------------------------------------------------------------------------------------


def _role(pod: Obj) -> str:
    return "leader" if labels_of(pod).get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX else "worker"


def _who(pod: Obj, container: str = "") -> str:
    return f"{_role(pod)} {name_of(pod)}" + (f" container {container}" if container else "")


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _container_statuses(pod: Obj) -> list[Obj]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _exit_detail(terminated: Obj) -> str:
    return f"exit code {int(terminated.get('exitCode') or 0)}"


def _container_problems(pod: Obj) -> list[tuple[int, Diagnosis]]:
    """Every container problem of one pod, ranked: config and image errors never heal by
    themselves, an OOM kill names its fix, a crash loop carries its last exit code."""
    found: list[tuple[int, Diagnosis]] = []
    for status in _container_statuses(pod):
        name = str(status.get("name") or "")
        state, last = status.get("state") or {}, status.get("lastState") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        last_terminated = last.get("terminated") or {}
        reason, detail = str(waiting.get("reason") or ""), str(waiting.get("message") or "").strip()
        restarts = int(status.get("restartCount") or 0)
        who = _who(pod, name)
        if reason in CONFIG_ERROR_REASONS:
            found.append(
                (0, Diagnosis(CAUSE_CONFIG_ERROR, f"{who} {reason}" + (f": {detail}" if detail else "")))
            )
        elif reason in IMAGE_PULL_REASONS:
            image = str(status.get("image") or "")
            text = f"{who} {reason}" + (f" ({image})" if image else "") + (f": {detail}" if detail else "")
            found.append((1, Diagnosis(CAUSE_IMAGE_PULL, text)))
        elif OOM_KILLED in (terminated.get("reason"), last_terminated.get("reason")):
            killed = terminated if terminated.get("reason") == OOM_KILLED else last_terminated
            text = f"{who} OOMKilled ({_exit_detail(killed)}, {restarts} restarts): raise its memory limit"
            found.append((2, Diagnosis(CAUSE_OOM_KILLED, text)))
        elif reason == CRASH_LOOP_BACK_OFF:
            exit_detail = f"{_exit_detail(last_terminated)}, " if last_terminated else ""
            text = f"{who} CrashLoopBackOff ({exit_detail}{restarts} restarts)"
            found.append((3, Diagnosis(CAUSE_CRASH_LOOP, text)))
        elif terminated and int(terminated.get("exitCode") or 0) != 0:
            text = f"{who} terminated: {terminated.get('reason') or 'Error'} ({_exit_detail(terminated)})"
            found.append((4, Diagnosis(CAUSE_CONTAINER_FAILED, text)))
        elif reason and reason not in _STARTING_REASONS:
            text = f"{who} waiting: {reason}" + (f": {detail}" if detail else "")
            found.append((5, Diagnosis(CAUSE_CONTAINER_WAITING, text)))
    return found


def _gang_name(pod: Obj) -> str | None:
    """The PodGroup a pod is gang-scheduled with (Workload API or Volcano), if any."""
    group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if group:
        return str(group)
    annotation = (metadata(pod).get("annotations") or {}).get(c.ANNOTATION_SCHEDULING_GROUP_NAME)
    return str(annotation) if annotation else None


def _unschedulable_condition(pod: Obj) -> str:
    """The scheduler's message on the pod itself (PodScheduled False, reason Unschedulable): what
    a reader without the namespace's events (the controller's caches) still knows."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == POD_SCHEDULED and condition.get("reason") == REASON_UNSCHEDULABLE:
            return str(condition.get("message") or "").strip()
    return ""


def _scheduling_wait(pod: Obj, failures: Mapping[str, str]) -> Diagnosis | None:
    """Why a pod without a node has none: the scheduler's words, a gate, or its gang."""
    if _node(pod) or pod_phase(pod) not in ("", "Pending"):
        return None
    if message := failures.get(uid_of(pod)) or _unschedulable_condition(pod):
        return Diagnosis(CAUSE_FAILED_SCHEDULING, f"{_who(pod)} unschedulable: {message}")
    if has_replacement_gate(pod):
        text = f"{_who(pod)} held at the group-replacement gate until the group it replaces is gone"
        return Diagnosis(CAUSE_REPLACEMENT_GATE, text)
    gates = [str(g.get("name") or "") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
    if gates:
        return Diagnosis(CAUSE_SCHEDULING_GATE, f"{_who(pod)} held by scheduling gate {', '.join(gates)}")
    if gang := _gang_name(pod):
        return Diagnosis(CAUSE_GANG_WAIT, f"{_who(pod)} waits for its gang (PodGroup {gang}) to be scheduled")
    return None


def _marked_by_node_controller(pod: Obj) -> bool:
    """Whether the pod is not Ready although every container last reported ready: the kubelet's
    report stands, so it was the node lifecycle controller that set Ready to False because the
    node stopped reporting (a stopped or unreachable kubelet). It changes nothing else."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ready = [x for x in (pod.get("status") or {}).get("conditions") or [] if x.get("type") == "Ready"]
    return (
        bool(_node(pod) and statuses and ready)
        and ready[0].get("status") == "False"
        and all(status.get("ready") is True for status in statuses)
    )


def _incarnation(leader: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """The leader and the workers of its incarnation: same revision, not being deleted."""
    revision = revision_key_of(leader)
    workers = [
        p for p in pods if not is_leader_pod(p) and revision_key_of(p) == revision and not is_deleting(p)
    ]
    return [leader, *workers]


def _worker_index(pod: Obj) -> int:
    value = labels_of(pod).get(c.LABEL_WORKER_INDEX, "")
    return int(value) if value.isdigit() else 0


# --- the group ---------------------------------------------------------------------------------


def diagnose_group(
    *,
    lws: Obj,
    leader: Obj | None,
    worker_sts: Obj | None,
    pods: Sequence[Obj],
    failures: Mapping[str, str],
) -> Diagnosis | None:
    """Why the group led by `leader` is not ready (None when nothing is wrong).

    `pods` are the group's pods (leader and workers), `failures` what `scheduling_failures`
    returns for the namespace's events. Only the leader's incarnation counts: workers on another
    revision or on their way out belong to the group it replaced (a rolling update recreates the
    leader first, the garbage collector takes the old workers afterwards), and their state says
    nothing about this one.
    """
    size = lws_size(lws)
    if leader is None:
        return Diagnosis(CAUSE_LEADER_MISSING, "leader pod missing")
    if is_exhausted(leader):
        return Diagnosis(CAUSE_RESTART_BUDGET_EXHAUSTED, RETAINED_GROUP_REASON)
    if metadata(leader).get("deletionTimestamp") is not None:
        return Diagnosis(CAUSE_LEADER_TERMINATING, "leader pod terminating")
    members = sorted(_incarnation(leader, pods), key=_worker_index)
    # The worst kind of problem in any pod wins; among equals, the leader's, then the lowest worker's.
    problems = [problem for pod in members for problem in _container_problems(pod)]
    if problems:
        return min(problems, key=lambda item: item[0])[1]
    for pod in members:
        if wait := _scheduling_wait(pod, failures):
            return wait
    if size > 1 and worker_sts is None:
        if startup_gate(lws, leader) is WorkerGate.WAIT_LEADER_READY:
            policy = c.STARTUP_POLICY_LEADER_READY
            text = f"workers not created until the leader is ready (startupPolicy {policy})"
            return Diagnosis(CAUSE_WAIT_LEADER_READY, text)
        if placement_gate(lws, leader) is WorkerGate.WAIT_LEADER_SCHEDULED:
            key = exclusive_topology_key(lws) or "(empty key)"
            text = f"workers wait for the leader to be scheduled (exclusive topology {key})"
            return Diagnosis(CAUSE_WAIT_LEADER_SCHEDULED, text)
        return Diagnosis(CAUSE_WORKERS_MISSING, "worker statefulset missing")
    if size > 1 and worker_sts is not None and foreign_worker_statefulset(worker_sts, leader):
        text = f"statefulset {name_of(worker_sts)} holds the worker name, but the leader does not control it"
        return Diagnosis(CAUSE_FOREIGN_WORKERS, text)
    for pod in members:
        if not _node(pod) and pod_phase(pod) in ("", "Pending"):
            return Diagnosis(CAUSE_UNSCHEDULED, f"{_who(pod)} Pending, not scheduled yet")
    lost = [pod for pod in members if _marked_by_node_controller(pod)]
    if lost:
        nodes = ", ".join(sorted({_node(pod) for pod in lost}))
        text = (
            f"{_who(lost[0])} marked not ready: node {nodes} stopped reporting (kubelet down or unreachable)"
        )
        return Diagnosis(CAUSE_NODE_NOT_READY, text)
    reasons = not_ready_reasons(leader, worker_sts, size=size, pods=pods)
    return Diagnosis(CAUSE_NOT_READY, "; ".join(reasons)) if reasons else None
