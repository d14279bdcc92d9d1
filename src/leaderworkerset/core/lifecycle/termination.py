"""podTerminationPolicy (KEP-956): which worker StatefulSet to delete with its leader.

Under `Default` the garbage collector removes a group's worker StatefulSet only once the leader
pod is gone from etcd, so a group with a long grace period takes two grace periods to go away.
Under `Parallel` the pod controller deletes the worker StatefulSet (Foreground) as soon as the
leader is terminating, so leader and workers shut down together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.naming import worker_pod_name
from leaderworkerset.core.objects import Obj, annotations_of, controller_owner, is_deleting, name_of, uid_of

# A replacement leader waits this long between looks at its predecessor's terminating worker
# StatefulSet (same name): creating over it would fail, adopting it would keep dying workers.
WORKER_STATEFULSET_TERMINATING_REQUEUE_SECONDS = 1.0


def is_parallel_termination(lws: Obj | None, leader: Obj) -> bool:
    """Parallel by the LWS spec, or by the leader's annotation: the annotation still decides
    when the LWS is already gone (deleted in the background before its leaders)."""
    spec = (lws or {}).get("spec") or {}
    if spec.get("podTerminationPolicy") == c.POD_TERMINATION_POLICY_PARALLEL:
        return True
    return (
        annotations_of(leader).get(c.ANNOTATION_POD_TERMINATION_POLICY) == c.POD_TERMINATION_POLICY_PARALLEL
    )


def worker_statefulset_to_delete(lws: Obj | None, leader: Obj, worker_sts: Obj | None) -> Obj | None:
    """The worker StatefulSet to delete now because `leader` is terminating under Parallel.

    Only the StatefulSet this very leader controls (owner UID) qualifies: a same-named one that
    belongs to a replacement leader must survive its predecessor's teardown. One that is
    already terminating needs no second delete.
    """
    if worker_sts is None or not is_deleting(leader) or is_deleting(worker_sts):
        return None
    if not is_parallel_termination(lws, leader):
        return None
    owner = controller_owner(worker_sts)
    if owner is None or owner.get("kind") != "Pod" or owner.get("uid") != uid_of(leader):
        return None
    return worker_sts


def leader_template_termination_annotations(lws: Obj) -> dict[str, str]:
    """The leader pod template annotation that carries Parallel to the pods themselves."""
    spec: Obj = lws.get("spec") or {}
    if spec.get("podTerminationPolicy") == c.POD_TERMINATION_POLICY_PARALLEL:
        return {c.ANNOTATION_POD_TERMINATION_POLICY: c.POD_TERMINATION_POLICY_PARALLEL}
    return {}


def worker_statefulsets_to_delete_with_lws(lws: Obj, statefulsets: Iterable[Obj]) -> list[Obj]:
    """A terminating Parallel LWS deletes every worker StatefulSet at once instead of after
    the garbage collector's LWS → leader StatefulSet → leader pod hops; the leader StatefulSet
    (owned by the LWS, not by a pod) is left to the garbage collector."""
    spec: Obj = lws.get("spec") or {}
    if not is_deleting(lws) or spec.get("podTerminationPolicy") != c.POD_TERMINATION_POLICY_PARALLEL:
        return []
    return [
        sts
        for sts in statefulsets
        if not is_deleting(sts) and (controller_owner(sts) or {}).get("kind") == "Pod"
    ]


def lingering_worker_pod(leader: Obj, size: int, pod_named: Callable[[str], Obj | None]) -> str | None:
    """The name of a predecessor's worker pod that still holds one of this group's worker names.

    Called when the leader has no worker StatefulSet yet. In a rolling update the StatefulSet
    controller deletes the old leader in the background, so the garbage collector removes the old
    worker StatefulSet at once and its pods only after their grace period. A worker StatefulSet
    created meanwhile makes kube-controller-manager fail on `<leader>-<j>` ("already exists … being
    deleted") and back off exponentially; waiting for the name keeps the group's names identical
    and costs nothing. A pod counts when it is terminating or controlled by some StatefulSet (the
    old one: the garbage collector deletes it); an orphan would be adopted, so it does not block.
    """
    for index in range(1, size):
        name = worker_pod_name(name_of(leader), index)
        pod = pod_named(name)
        if pod is None:
            continue
        owner = controller_owner(pod) or {}
        if is_deleting(pod) or owner.get("kind") == "StatefulSet":
            return name
    return None
