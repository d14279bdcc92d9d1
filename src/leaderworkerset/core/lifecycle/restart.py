"""Pod-controller decisions for one group: restart policies and worker startup.

Restart policies
  * RecreateGroupOnPodRestart: any container restart (restartCount > 0 while Running/Pending) or
    the deletion of any pod of the group deletes the leader with Foreground propagation; the worker
    StatefulSet goes with it (it is owned by the leader) and the leader StatefulSet recreates the
    whole group.
  * RecreateGroupAfterStart (or the legacy `experimental-recreate-group-after-start` annotation on
    the LWS): the same, but only once every pod of the group exists and has left Pending.
  * None / Default: nothing; Kubernetes restarts containers individually.

A failure must recreate the group exactly once. Stale signals are ignored: a worker whose
revision differs from its leader's belongs to a group being replaced, and a worker whose owner chain
(pod → worker StatefulSet UID → leader pod UID) does not reach the *current* leader belongs to a
previous incarnation of the group — e.g. the deletion snapshot of a worker that the StatefulSet
already re-created under the same name, replayed after the group was recreated.

The I/O shell gathers the inputs (`restart_lookup` says what to read), calls `decide_restart`,
and carries out the decision.
"""

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.naming import leader_name_for_worker
from leaderworkerset.core.groups.state import (
    container_restarted,
    containers_ready,
    is_leader_pod,
    pod_pending,
    pod_ready,
)
from leaderworkerset.core.objects import (
    ControllerEvent,
    Obj,
    annotations_of,
    controller_owner,
    is_deleting,
    labels_of,
    lws_size,
    name_of,
    namespace_of,
    revision_key_of,
    spec_is_hash,
    uid_of,
)

# The in-place-update-restarts value while the pod's group is being updated in place.
IN_PLACE_RESTARTS_PENDING = "pending"

_RECREATING_POLICIES = (
    c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
    c.RESTART_POLICY_RECREATE_GROUP_AFTER_START,
)
_STATEFULSET_KIND = "StatefulSet"
_POD_KIND = "Pod"
# Deletion propagation for a leader: its dependents (worker StatefulSet, then worker pods) go first.
FOREGROUND = "Foreground"
# A leader whose ControllerRevision is not in the cache yet is retried after this long.
MISSING_REVISION_REQUEUE_SECONDS = 1.0
# A group blocked by a StatefulSet someone else made under its worker name looks again this often:
# an unlabelled one is outside our caches, so no watch event tells us it went.
FOREIGN_WORKERS_RECHECK_SECONDS = 10.0


class GroupRestartError(ValueError):
    """The pod cannot be related to a leader (a reconcile error upstream too)."""


def restart_policy(lws: Obj) -> str:
    """The policy as stored ("" if absent: the CRD default always fills it on real objects)."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    return str(lwt.get("restartPolicy") or "")


def recreates_groups(lws: Obj) -> bool:
    return restart_policy(lws) in _RECREATING_POLICIES


def waits_for_group_start(lws: Obj) -> bool:
    """RecreateGroupAfterStart, or the legacy annotation (any value, even empty) on the LWS."""
    return (
        restart_policy(lws) == c.RESTART_POLICY_RECREATE_GROUP_AFTER_START
        or c.ANNOTATION_EXPERIMENTAL_RECREATE_GROUP_AFTER_START in annotations_of(lws)
    )


def check_group_pod(pod: Obj) -> None:
    """The pod controller only handles pods labelled with the set name and a worker index."""
    labels = labels_of(pod)
    for key in (c.LABEL_SET_NAME, c.LABEL_WORKER_INDEX):
        # The name label must be non-empty; the worker index only has to be present.
        if key not in labels or (key == c.LABEL_SET_NAME and not labels[key]):
            raise GroupRestartError(f"{key} label is unexpected missing")


def replay_deleted_pod(snapshot: Obj) -> bool:
    """Whether a pod's deletion snapshot is reconciled (v1.0).

    A worker's snapshot is a failure signal even after the StatefulSet re-created a pod with the
    same name. A leader's is not replayed: its deletion already ended the group, and acting on it
    could hit the replacement leader of the same name.
    """
    return not is_leader_pod(snapshot)


def restart_triggered(lws: Obj, pod: Obj) -> bool:
    """The pod signals a group failure under a recreating policy."""
    return recreates_groups(lws) and (
        (container_restarted(pod) and restarts_beyond_in_place(pod)) or is_deleting(pod)
    )


def restart_total(pod: Obj) -> int:
    status = pod.get("status") or {}
    statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def restarts_beyond_in_place(pod: Obj) -> bool:
    """Some container restarted more often than the pod's in-place updates account for: none while
    its group is being updated in place (the kubelet restarts a container whose image changed, and
    workers may exit while their leader restarts: no failure), then the count the update left."""
    allowance = annotations_of(pod).get(ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS)
    if allowance == IN_PLACE_RESTARTS_PENDING:
        return False
    try:
        allowed = int(allowance) if allowance is not None else 0
    except ValueError:
        allowed = 0
    return restart_total(pod) > allowed


def group_pods_selector(pod: Obj) -> dict[str, str]:
    """Labels selecting every pod of the pod's group, any revision, terminating ones included."""
    labels = labels_of(pod)
    return {
        c.LABEL_SET_NAME: labels.get(c.LABEL_SET_NAME, ""),
        c.LABEL_GROUP_INDEX: labels.get(c.LABEL_GROUP_INDEX, ""),
    }


def group_pending(group_pods: Iterable[Obj], size: int) -> bool:
    """The group is still starting: not exactly `size` pods exist, or one of them is Pending."""
    pods = list(group_pods)
    return len(pods) != size or any(pod_pending(p) for p in pods)


def owner_statefulset_name(worker: Obj) -> str | None:
    """Name of the StatefulSet controlling a worker pod, when that is its controller."""
    owner = controller_owner(worker)
    if owner is None or owner.get("kind") != _STATEFULSET_KIND:
        return None
    return str(owner.get("name") or "")


def orphaned_workers(worker_statefulset: Obj, pods: Iterable[Obj]) -> list[Obj]:
    """Pods (not yet leaving) controlled by a StatefulSet of ``worker_statefulset``'s name but another
    UID: left over from the group's previous incarnation, whose StatefulSet is gone. They hold the
    names the new StatefulSet must create its pods under."""
    orphans = []
    for pod in pods:
        owner = controller_owner(pod)
        if (
            owner is not None
            and owner.get("kind") == _STATEFULSET_KIND
            and owner.get("name") == name_of(worker_statefulset)
            and owner.get("uid") != uid_of(worker_statefulset)
            and not is_deleting(pod)
        ):
            orphans.append(pod)
    return orphans


def foreign_worker_statefulset(workers: Obj, leader: Obj) -> bool:
    """Whether a StatefulSet under the group's worker name was made by someone else.

    Ours is always controlled by the leader pod it is named after. One controlled by a pod of that
    name with another UID is a predecessor's, on its way out; anything else we never made, and must
    neither adopt, replace nor ignore in silence.
    """
    owner = controller_owner(workers)
    return owner is None or owner.get("kind") != _POD_KIND or owner.get("name") != name_of(leader)


def foreign_worker_statefulset_event(workers: Obj, leader: Obj) -> ControllerEvent:
    """Warning on the LWS naming the StatefulSet that blocks the group, and who controls it."""
    owner = controller_owner(workers)
    controller = f"{owner.get('kind')}/{owner.get('name')}" if owner is not None else "none"
    group = labels_of(leader).get(c.LABEL_GROUP_INDEX, "?")
    message = c.MSG_FOREIGN_WORKER_STATEFULSET % (name_of(workers), group, name_of(leader), controller)
    return ControllerEvent(
        c.EVENT_TYPE_WARNING,
        c.EVENT_FOREIGN_WORKER_STATEFULSET,
        c.EVENT_ACTION_CREATE,
        message,
        ("Pod", name_of(leader)),
    )


def worker_belongs_to_leader(worker: Obj, leader: Obj, owner_statefulset: Obj | None) -> bool:
    """Whether the worker's controller chain reaches this leader (by name and UID).

    `owner_statefulset` is the StatefulSet currently stored under the worker's owner name (None
    when absent); its UID must match the worker's ownerReference, or it is a newer namesake.
    """
    owner = controller_owner(worker)
    if owner is None:
        return False
    if owner.get("kind") == _POD_KIND:
        return owner.get("name") == name_of(leader) and owner.get("uid") == uid_of(leader)
    if owner.get("kind") != _STATEFULSET_KIND or owner_statefulset is None:
        return False
    if uid_of(owner_statefulset) != owner.get("uid"):
        return False
    sts_owner = controller_owner(owner_statefulset)
    return (
        sts_owner is not None
        and sts_owner.get("kind") == _POD_KIND
        and sts_owner.get("name") == name_of(leader)
        and sts_owner.get("uid") == uid_of(leader)
    )


@dataclass(frozen=True)
class RestartLookup:
    """What the shell must read before `decide_restart`: the group's pods and, for a worker, its
    leader and the StatefulSet named by its owner reference."""

    group_selector: dict[str, str]
    leader_name: str
    owner_statefulset_name: str | None


def restart_lookup(lws: Obj, pod: Obj) -> RestartLookup | None:
    """None when the pod does not trigger a group restart (the common case: nothing to read).

    Raises GroupRestartError for a worker whose leader cannot be named.
    """
    if not restart_triggered(lws, pod):
        return None
    if is_leader_pod(pod):
        return RestartLookup(group_pods_selector(pod), name_of(pod), None)
    leader_name = leader_name_for_worker(pod)
    if leader_name is None:
        raise GroupRestartError(f"parsing pod name for pod {name_of(pod)}")
    return RestartLookup(group_pods_selector(pod), leader_name, owner_statefulset_name(pod))


class RestartAction(enum.Enum):
    NONE = "none"  # no trigger, group still starting, leader gone, or a stale signal: carry on
    LEADER_DELETING = "leader-deleting"  # the group is already being recreated: stop here
    DELETE_LEADER = "delete-leader"  # delete the leader (Foreground), record the event, stop


@dataclass(frozen=True)
class RestartDecision:
    action: RestartAction
    reason: str = ""
    leader_name: str = ""
    # Use as a delete precondition so a same-name replacement leader is never deleted by mistake.
    leader_uid: str = ""
    event: ControllerEvent | None = None

    @property
    def stop(self) -> bool:
        """Whether the pod reconcile ends here (upstream's `leaderDeleted`)."""
        return self.action is not RestartAction.NONE


def _carry_on(reason: str) -> RestartDecision:
    return RestartDecision(RestartAction.NONE, reason)


def recreate_group_event(pod: Obj, leader: Obj) -> ControllerEvent:
    """Upstream words it "Worker pod …" even when the failing pod is the leader itself."""
    message = c.MSG_RECREATE_GROUP % (
        name_of(pod),
        name_of(leader),
        labels_of(leader).get(c.LABEL_GROUP_INDEX, ""),
    )
    return ControllerEvent(
        c.EVENT_TYPE_NORMAL, c.EVENT_RECREATE_GROUP, c.EVENT_ACTION_DELETE, message, ("Pod", name_of(leader))
    )


def decide_restart(
    lws: Obj,
    pod: Obj,
    *,
    group_pods: Iterable[Obj] = (),
    leader: Obj | None = None,
    owner_statefulset: Obj | None = None,
) -> RestartDecision:
    """The restart-policy decision for one pod event, given what `restart_lookup` asked for.

    `pod` may be a deletion snapshot. `leader` is the pod stored under the leader name (None when
    not found; ignored when `pod` is itself a leader). `group_pods` are the pods matching
    `group_pods_selector(pod)`. The live spec size decides "pending", as upstream.
    """
    if not restart_triggered(lws, pod):
        return _carry_on("no restart trigger")
    if waits_for_group_start(lws) and group_pending(group_pods, lws_size(lws)):
        return _carry_on("group still starting")
    if is_leader_pod(pod):
        leader = pod
    else:
        if leader is None:
            return _carry_on("leader not found")
        if revision_key_of(leader) != revision_key_of(pod):
            return _carry_on("worker from another revision than its leader")
        if not worker_belongs_to_leader(pod, leader, owner_statefulset):
            return _carry_on("worker from a previous incarnation of the group")
    if is_deleting(leader):
        return RestartDecision(RestartAction.LEADER_DELETING, "leader already deleting", name_of(leader))
    return RestartDecision(
        RestartAction.DELETE_LEADER,
        "group failure",
        name_of(leader),
        uid_of(leader),
        recreate_group_event(pod, leader),
    )


# --- leader flow: when to build the worker StatefulSet ------------------------------------


def misannotated_leader_event(lws: Obj, leader: Obj) -> ControllerEvent | None:
    """A leader carrying `leader-name` means the cluster ignores StatefulSet start ordinals (the
    worker StatefulSet would re-create the leader's name forever): warn and stop."""
    if not annotations_of(leader).get(c.ANNOTATION_LEADER_NAME):
        return None
    message = c.MSG_LEADER_NAME_ANNOTATION_MISTAKE % (namespace_of(leader), name_of(leader))
    return ControllerEvent(
        c.EVENT_TYPE_WARNING, c.EVENT_FAILED_CREATE, c.EVENT_ACTION_CREATE, message, ("Pod", name_of(leader))
    )


class WorkerGate(enum.Enum):
    PROCEED = "proceed"
    NO_WORKERS = "no-workers"  # live size 1: a group is just its leader
    WAIT_LEADER_READY = "wait-leader-ready"  # LeaderReady startup; the leader's update re-triggers
    WAIT_LEADER_SCHEDULED = "wait-leader-scheduled"  # exclusive topology needs the leader's node


def startup_gate(lws: Obj, leader: Obj) -> WorkerGate:
    """Size and startup policy checks, in upstream's order, on the live spec.

    LeaderReady waits for the leader's PodReady condition; with Hash identity PodReady itself
    waits for the workers (group-ready gate), so ContainersReady is used instead.
    """
    spec = lws.get("spec") or {}
    if lws_size(lws) == 1:
        return WorkerGate.NO_WORKERS
    if spec.get("startupPolicy") == c.STARTUP_POLICY_LEADER_READY:
        started = containers_ready(leader) if spec_is_hash(spec) else pod_ready(leader)
        if not started:
            return WorkerGate.WAIT_LEADER_READY
    return WorkerGate.PROCEED


def exclusive_topology_key(lws: Obj) -> str | None:
    """The exclusive-topology key when the annotation is *present* (even empty), else None."""
    annotations = annotations_of(lws)
    if c.ANNOTATION_EXCLUSIVE_TOPOLOGY not in annotations:
        return None
    return annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY]


def placement_gate(lws: Obj, leader: Obj) -> WorkerGate:
    """Exclusive placement pins workers to the leader's topology domain: wait until it is bound."""
    if exclusive_topology_key(lws) is not None and not (leader.get("spec") or {}).get("nodeName"):
        return WorkerGate.WAIT_LEADER_SCHEDULED
    return WorkerGate.PROCEED


class TopologyError(ValueError):
    """The leader's node lacks the topology label (a reconcile error, retried)."""


def topology_node_selector(node: Obj, topology_key: str) -> dict[str, str]:
    """`{key: value}` pinning workers next to the leader; v1.0 names the missing key in the error."""
    labels = labels_of(node)
    if topology_key not in labels:
        raise TopologyError(f"node does not have topology label: {topology_key}")
    return {topology_key: labels[topology_key]}


def worker_statefulset_created_event(leader: Obj) -> ControllerEvent:
    return ControllerEvent(
        c.EVENT_TYPE_NORMAL,
        c.EVENT_GROUPS_PROGRESSING,
        c.EVENT_ACTION_CREATE,
        c.MSG_CREATED_WORKER_STS % name_of(leader),
        ("Pod", name_of(leader)),
    )


def worker_statefulset_failed_event(leader: Obj, error: str) -> ControllerEvent:
    """Warning for a failed create (AlreadyExists is not a failure: upstream ignores it silently)."""
    message = c.MSG_FAILED_CREATE_WORKER_STS.replace("%v", "%s") % (name_of(leader), error)
    return ControllerEvent(
        c.EVENT_TYPE_WARNING, c.EVENT_FAILED_CREATE, c.EVENT_ACTION_CREATE, message, ("Pod", name_of(leader))
    )
