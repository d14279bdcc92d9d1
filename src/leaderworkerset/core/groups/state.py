"""Observed state of LeaderWorkerSet groups, read from objects as the API server returns them.

A *group* is one leader pod plus (when size > 1) the worker StatefulSet named after it. The LWS
controller, the pod controller and the status code all ask the same questions of those objects —
is the leader running and ready, is the worker StatefulSet rolled out, which revision does each
carry — so the answers live here, once.

Every function takes plain JSON dicts (the shape of `kubectl get -o json`); missing fields read as
Go's zero values, because that is what upstream's typed structs see.

"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import parse_time
from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi, go_atoi_positive
from leaderworkerset.core.groups.naming import leader_pod_name
from leaderworkerset.core.objects import (
    Obj,
    annotations_of,
    is_controlled_by,
    is_deleting,
    labels_of,
    name_of,
    revision_key_of,
    statefulset_replicas,
)

_POD_RUNNING = "Running"


_POD_PENDING = "Pending"


_POD_READY = "Ready"


_CONTAINERS_READY = "ContainersReady"


@dataclass(frozen=True)
class GroupState:
    """Whether a group (leader + its worker StatefulSet) is ready and carries the current revision."""

    ready: bool
    updated: bool

    @property
    def ready_and_updated(self) -> bool:
        return self.ready and self.updated


MISSING_GROUP = GroupState(ready=False, updated=False)


def parse_group_index(obj: Obj) -> int:
    """The `group-index` label as an integer; raises GoParseError worded like strconv.Atoi."""
    return go_atoi(labels_of(obj).get(c.LABEL_GROUP_INDEX, ""))


def is_leader_pod(pod: Obj) -> bool:
    return labels_of(pod).get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _pod_condition_true(pod: Obj, condition_type: str) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return bool(condition.get("status") == c.CONDITION_TRUE)
    return False


def pod_ready(pod: Obj) -> bool:
    """PodReady condition is True (phase not checked; LeaderReady startup uses exactly this)."""
    return _pod_condition_true(pod, _POD_READY)


def containers_ready(pod: Obj) -> bool:
    return _pod_condition_true(pod, _CONTAINERS_READY)


def pod_running_and_ready(pod: Obj) -> bool:
    return pod_phase(pod) == _POD_RUNNING and pod_ready(pod)


def pod_pending(pod: Obj) -> bool:
    return pod_phase(pod) == _POD_PENDING


def container_restarted(pod: Obj) -> bool:
    """Any (init) container restarted while the pod is Running or Pending.

    restartCount never goes back to zero, so this stays true for the rest of the pod's life: the
    pod controller treats it as a sticky trigger, evaluated again on every later event of the pod.
    """
    if pod_phase(pod) not in (_POD_RUNNING, _POD_PENDING):
        return False
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return any(int(s.get("restartCount") or 0) > 0 for s in statuses)


def statefulset_ready(sts: Obj) -> bool:
    """Every replica available and the StatefulSet controller finished rolling its own template."""
    status = sts.get("status") or {}
    return statefulset_replicas(sts) == int(status.get("availableReplicas") or 0) and (
        status.get("currentRevision") or ""
    ) == (status.get("updateRevision") or "")


def slot_by_group_index(items: Iterable[Obj], length: int) -> list[Obj | None]:
    """Place objects at their `group-index`; unparsable or out-of-range indexes are dropped.

    Later objects win a slot, like upstream's SortByIndex. The leader StatefulSet has no group
    index, so listing every StatefulSet labelled with the LWS name is safe.
    """
    slots: list[Obj | None] = [None] * max(length, 0)
    for item in items:
        try:
            index = parse_group_index(item)
        except GoParseError:
            continue
        # Upstream would panic on a negative index; ignoring it is the only sane reading.
        if 0 <= index < length:
            slots[index] = item
    return slots


def group_states(
    *,
    lws_name: str,
    sts_replicas: int,
    size: int,
    revision_key: str,
    leader_pods: Iterable[Obj],
    statefulsets: Iterable[Obj],
) -> list[GroupState]:
    """State of each leader-StatefulSet ordinal in [0, sts_replicas) for the partition math.

    A slot whose leader pod (or, for size > 1, worker StatefulSet) is not the one named
    `<lws>-<idx>` counts as missing: it is being created or rebuilt, so neither ready nor updated.
    `size` is the live spec size: during a 1→N resize old groups without workers count as missing.
    """
    pods = slot_by_group_index(leader_pods, sts_replicas)
    stss = slot_by_group_index(statefulsets, sts_replicas)
    no_workers = size == 1
    states: list[GroupState] = []
    for idx in range(max(sts_replicas, 0)):
        expected = leader_pod_name(lws_name, idx)
        pod, sts = pods[idx], stss[idx]
        if pod is None or name_of(pod) != expected:
            states.append(MISSING_GROUP)
            continue
        if no_workers:
            states.append(GroupState(pod_running_and_ready(pod), revision_key_of(pod) == revision_key))
            continue
        if sts is None or name_of(sts) != expected:
            states.append(MISSING_GROUP)
            continue
        states.append(group_state(pod, sts, revision_key))
    return states


def group_state(leader: Obj, worker_sts: Obj | None, revision_key: str) -> GroupState:
    """Ready/updated of one group; `worker_sts` None means the group has no workers (size 1)."""
    ready = pod_running_and_ready(leader)
    updated = revision_key_of(leader) == revision_key
    if worker_sts is not None:
        ready = ready and statefulset_ready(worker_sts)
        updated = updated and revision_key_of(worker_sts) == revision_key
    return GroupState(ready=ready, updated=updated)


def states_ready_updated(states: Sequence[GroupState]) -> int:
    return sum(1 for s in states if s.ready_and_updated)


@dataclass(frozen=True)
class GroupView:
    """One group as an operator sees it: identity, revision, state and why it is not ready."""

    index: int  # the ordinal; -1 for a Hash group, which has no ordinal
    leader: str
    revision: str
    ready: bool
    updated: bool
    reasons: tuple[str, ...]
    key: str = ""  # the group-index label: the ordinal, or the 40-hex key of a Hash group
    hostname: str = ""

    @property
    def name(self) -> str:
        """How an operator names the group: its ordinal, or the first 8 characters of its key."""
        return str(self.index) if self.index >= 0 else self.key[:8]


def is_hash_pod(pod: Obj) -> bool:
    """The pod belongs to a Hash-identity group (its `group-identity` annotation, stamped at creation)."""
    return annotations_of(pod).get(c.ANNOTATION_GROUP_IDENTITY) == c.GROUP_IDENTITY_HASH


def has_replacement_gate(pod: Obj) -> bool:
    """The pod still waits behind the group-replacement scheduling gate (Hash leaders)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(gate.get("name") == c.SCHEDULING_GATE_GROUP_REPLACEMENT for gate in gates)


def is_exhausted(pod: Obj) -> bool:
    """The leader of a group retained after exhausting its restart budget (maxGroupRestarts)."""
    return annotations_of(pod).get(c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED) == "true"


RETAINED_GROUP_REASON = (
    f"restart budget exhausted: annotate the leader {c.ANNOTATION_RECOVER}=true to restart it"
)


# Whole-group readiness as upstream main after v1.0 defines it (its `pkg/replicagroups`). v1.0, and
# our LWS status whose counts v1.0 clients read, stop at `group_state`: leader Running and Ready,
# worker StatefulSet with every replica available at one revision. Main also asks for the group's
# own size (the leader's `size` annotation, stamped at creation, not the set's live size; unreadable
# = unknown, never ready), a worker StatefulSet that wants exactly size - 1 workers, and every worker
# pod `<worker sts>-1 … -(size-1)` that StatefulSet controls Running and Ready (availableReplicas
# lags a worker that has just turned unready). What is ours to decide — `lws status`, the not-ready
# diagnosis — uses it (docs/compatibility.md, "Upstream main after v1.0").


def own_group_size(leader: Obj, live_size: int) -> int | None:
    """The group's size: its leader's `size` annotation; None when not an integer or < 1 (unknown).

    Every leader our webhook or upstream's admitted carries it; without one (a pod that skipped
    admission) the set's live size is the only size there is, as v1.0 judged every group."""
    value = annotations_of(leader).get(c.ANNOTATION_SIZE)
    return live_size if value is None else go_atoi_positive(value)


def whole_group_problems(
    leader: Obj, worker_sts: Obj | None, pods: Iterable[Obj], *, live_size: int
) -> tuple[str, ...]:
    """What upstream main's rule finds beyond v1.0's (`pods`: any; only those the worker StatefulSet
    controls count). A missing worker StatefulSet is v1.0's to say."""
    size = own_group_size(leader, live_size)
    if size is None:
        value = annotations_of(leader).get(c.ANNOTATION_SIZE)
        return (f"group size unknown (leader annotation {c.ANNOTATION_SIZE} {value!r})",)
    if size == 1 or worker_sts is None:
        return ()
    problems: list[str] = []
    wanted = (worker_sts.get("spec") or {}).get("replicas")
    if wanted != size - 1:
        problems.append(
            f"worker statefulset wants {'unset' if wanted is None else wanted} workers, not {size - 1}"
        )
    workers = {name_of(pod): pod for pod in pods if is_controlled_by(pod, worker_sts)}
    expected = [f"{name_of(worker_sts)}-{i}" for i in range(1, size)]
    missing = [name for name in expected if name not in workers]
    unready = [name for name in expected if name in workers and not pod_running_and_ready(workers[name])]
    if missing:
        problems.append("worker pods missing: " + ", ".join(missing))
    if unready:
        problems.append("worker pods not ready: " + ", ".join(unready))
    return tuple(problems)


def not_ready_reasons(
    leader: Obj | None, worker_sts: Obj | None, *, size: int, pods: Iterable[Obj] | None = None
) -> tuple[str, ...]:
    """Why a group is not ready, in the order an operator would check (empty when ready).

    With `pods` (the group's, or any superset), upstream main's whole-group rule applies on top, and
    `size` gives way to the group's own (`whole_group_problems`)."""
    if leader is None:
        return ("leader pod missing",)
    strict = () if pods is None else whole_group_problems(leader, worker_sts, pods, live_size=size)
    if pods is not None:
        size = own_group_size(leader, size) or size
    reasons = [RETAINED_GROUP_REASON] if is_exhausted(leader) else []
    if is_deleting(leader):
        reasons.append("leader pod terminating")
    if pod_phase(leader) != _POD_RUNNING:
        reasons.append(f"leader pod {pod_phase(leader) or 'phase unknown'}")
    elif not pod_ready(leader):
        reasons.append("leader pod not ready")
    if size == 1:
        return (*reasons, *strict)
    if worker_sts is None:
        return (*reasons, "worker statefulset missing", *strict)
    status = worker_sts.get("status") or {}
    available, wanted = int(status.get("availableReplicas") or 0), statefulset_replicas(worker_sts)
    if available != wanted:
        reasons.append(f"workers available {available}/{wanted}")
    if (status.get("currentRevision") or "") != (status.get("updateRevision") or ""):
        reasons.append("worker statefulset rolling its pods")
    return (*reasons, *strict)


def describe_groups(
    *,
    size: int,
    revision_key: str,
    leader_pods: Iterable[Obj],
    worker_statefulsets: Mapping[str, Obj],
    pods: Iterable[Obj] | None = None,
) -> list[GroupView]:
    """Every group that has a leader pod, by group index; Hash groups (40-hex keys) after the
    ordinals, by key. Other unparsable indexes are skipped.

    With `pods` (the set's), a group is ready only by upstream main's whole-group rule as well
    (`whole_group_problems`), judged at its own size."""
    members = None if pods is None else list(pods)
    views = []
    for pod in leader_pods:
        key = labels_of(pod).get(c.LABEL_GROUP_INDEX, "")
        try:
            index = parse_group_index(pod)
        except GoParseError:
            if not is_hash_pod(pod) or not key:
                continue
            index = -1
        own_size = size if members is None else own_group_size(pod, size) or size
        worker_sts = None if own_size == 1 else worker_statefulsets.get(name_of(pod))
        state = group_state(pod, worker_sts, revision_key) if own_size == 1 or worker_sts else MISSING_GROUP
        strict = () if members is None else whole_group_problems(pod, worker_sts, members, live_size=size)
        views.append(
            GroupView(
                index=index,
                leader=name_of(pod),
                revision=revision_key_of(pod),
                # A group retained after exhausting its restart budget is stopped, even while its
                # pods still report Ready on their way out (they do for a while; on kwok, for good).
                ready=state.ready and not is_exhausted(pod) and not strict,
                updated=state.updated,
                reasons=not_ready_reasons(pod, worker_sts, size=size, pods=members),
                key=key,
                hostname=str((pod.get("spec") or {}).get("hostname") or ""),
            )
        )
    return sorted(views, key=lambda view: (view.index < 0, view.index, view.key, view.leader))


def ready_since(pod: Obj) -> datetime | None:
    """When the pod last became Ready (its Ready condition's transition time), None if not Ready."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == _POD_READY and condition.get("status") == c.CONDITION_TRUE:
            return parse_time(condition.get("lastTransitionTime"))
    return None
