"""Leader pod replacement where the cluster's StatefulSets ignore `maxUnavailable`.

The leader StatefulSet is applied with `rollingUpdate.maxUnavailable` set to the rollout budget
(`RolloutBudget.statefulset_max_unavailable`). With the Kubernetes feature gate
`MaxUnavailableStatefulSet` off (the default up to 1.36, on from 1.37) two things happen:

* kube-apiserver drops the field from the write (`dropStatefulSetDisabledFields`, unless the
  stored object already had it), so the stored StatefulSet has no `maxUnavailable`;
* the StatefulSet controller replaces pods at or above the partition one at a time.

So a leader StatefulSet that we asked for `maxUnavailable > 1` but that is stored without the field
tells us (`ignores_max_unavailable`) that this cluster rolls one group at a time. The reading
assumes that kube-controller-manager runs with the same gate as kube-apiserver (they come from one
release and one configuration in every distribution we know of). A cluster whose apiserver keeps
the field while its controller manager ignores it is not detected.

Where it is detected, the LWS controller deletes the outdated leader pods itself, exactly as the
1.37 StatefulSet controller does with the gate on for `podManagementPolicy: Parallel`
(`updateStatefulSetAfterInvariantEstablished`): `leader_replacements` returns those pods. Deleting
a leader pod at or above the partition makes the StatefulSet controller recreate it at the update
revision; its worker StatefulSet goes with it through owner references. Where the field is stored
(gate on), the StatefulSet controller does this itself and `leader_replacements` returns nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.intstr import IntOrPercentError
from leaderworkerset.core.gocompat.strconv import GoParseError
from leaderworkerset.core.groups.state import parse_group_index, pod_ready
from leaderworkerset.core.objects import (
    Obj,
    is_controlled_by,
    is_deleting,
    labels_of,
    metadata,
    name_of,
    statefulset_partition,
    statefulset_replicas,
    uid_of,
)
from leaderworkerset.core.rollout.partition import rollout_budget

FEATURE_GATE = "MaxUnavailableStatefulSet"

# The line `lws plan` and `lws status` print; the event says the same in the LWS's words.
NOTE_PREFIX = "this cluster rolls one group at a time: "

# Why a pod is deleted (the two phases of the StatefulSet controller's Parallel update).
REASON_UNAVAILABLE = "outdated and unavailable"
REASON_AVAILABLE = "outdated, within maxUnavailable"


def _rolling_update(sts: Obj) -> Obj:
    rolling: Obj = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return rolling


def wanted_max_unavailable(lws: Obj) -> int:
    """The maxUnavailable the controller applies on the leader StatefulSet (1 when the LWS's
    rollout knobs cannot be scaled: the reconcile reports that error itself)."""
    try:
        return rollout_budget(lws).statefulset_max_unavailable
    except IntOrPercentError:
        return 1


def ignores_max_unavailable(lws: Obj, leader_sts: Obj | None) -> bool:
    """The LWS wants the leader StatefulSet to take down more than one group at a time, and the
    StatefulSet as the API server stores it has no maxUnavailable: the API server dropped it, so
    the StatefulSet controller replaces one group at a time."""
    if leader_sts is None or wanted_max_unavailable(lws) <= 1:
        return False
    return _rolling_update(leader_sts).get("maxUnavailable") is None


def emulation_note(lws: Obj, leader_sts: Obj | None) -> str | None:
    """The line `lws plan` and `lws status` show where `ignores_max_unavailable` holds."""
    if not ignores_max_unavailable(lws, leader_sts):
        return None
    return (
        f"{NOTE_PREFIX}the API server dropped maxUnavailable from the leader StatefulSet (feature gate "
        f"{FEATURE_GATE} is off), so the LeaderWorkerSet controller replaces up to "
        f"{wanted_max_unavailable(lws)} groups at a time itself"
    )


def may_replace(lws: Obj, leader_sts: Obj | None) -> bool:
    """Whether `leader_replacements` can find anything, read from the StatefulSet alone (so a
    steady set's leader pods are not read): it ignores maxUnavailable and has not finished rolling
    (the StatefulSet controller sets currentRevision to updateRevision once every pod is updated)."""
    if leader_sts is None or not ignores_max_unavailable(lws, leader_sts):
        return False
    status = leader_sts.get("status") or {}
    current = status.get("currentRevision")
    return not current or current != status.get("updateRevision")


@dataclass(frozen=True)
class LeaderDeletion:
    """A leader pod to delete (with its UID as the precondition) and why."""

    name: str
    uid: str
    ordinal: int
    reason: str


def _ordinal(pod: Obj) -> int | None:
    try:
        return parse_group_index(pod)
    except GoParseError:
        return None


def _owned_by(pod: Obj, sts: Obj) -> bool:
    return not uid_of(sts) or is_controlled_by(pod, sts)


def leader_replacements(
    lws: Obj,
    leader_sts: Obj | None,
    leader_pods: Iterable[Obj],
    *,
    deleted_uids: Collection[str] = (),
) -> tuple[LeaderDeletion, ...]:
    """The leader pods to delete so that `maxUnavailable` groups roll at once, highest ordinal
    first; nothing unless `may_replace`, the StatefulSet rolls (RollingUpdate) and its controller
    has observed its current generation (else its update revision may be stale).

    Mirrors the 1.37 StatefulSet controller for Parallel pods: a pod is unavailable when it is not
    Ready (the leader StatefulSet has no minReadySeconds) or terminating, and an ordinal below
    spec.replicas without a pod counts as unavailable too (the StatefulSet controller creates it
    before it updates). `deleted_uids` are pods this process already deleted that the cache may not
    show as terminating yet: they count as terminating, so a stale read never exceeds the budget.
    """
    if leader_sts is None or is_deleting(leader_sts) or not may_replace(lws, leader_sts):
        return ()
    spec, status = leader_sts.get("spec") or {}, leader_sts.get("status") or {}
    strategy = (spec.get("updateStrategy") or {}).get("type") or c.ROLLOUT_STRATEGY_ROLLING_UPDATE
    update_revision = str(status.get("updateRevision") or "")
    observed = status.get("observedGeneration")
    if strategy != c.ROLLOUT_STRATEGY_ROLLING_UPDATE or not update_revision:
        return ()
    if observed is None or observed != metadata(leader_sts).get("generation"):
        return ()
    max_unavailable = max(1, wanted_max_unavailable(lws))
    replicas, partition = statefulset_replicas(leader_sts), statefulset_partition(leader_sts)

    by_ordinal: dict[int, Obj] = {}
    for pod in leader_pods:
        ordinal = _ordinal(pod)
        if ordinal is not None and 0 <= ordinal < replicas and _owned_by(pod, leader_sts):
            by_ordinal[ordinal] = pod

    def terminating(pod: Obj) -> bool:
        return is_deleting(pod) or uid_of(pod) in deleted_uids

    def outdated(pod: Obj) -> bool:
        return labels_of(pod).get(c.LABEL_CONTROLLER_REVISION_HASH, "") != update_revision

    def unavailable(pod: Obj | None) -> bool:
        return pod is None or not pod_ready(pod) or terminating(pod)

    unavailable_pods = sum(1 for ordinal in range(replicas) if unavailable(by_ordinal.get(ordinal)))
    needing_update = sum(
        1 for pod in by_ordinal.values() if unavailable(pod) and outdated(pod) and not terminating(pod)
    )
    if unavailable_pods >= max_unavailable and needing_update == 0:
        return ()
    top_down = [by_ordinal[o] for o in range(replicas - 1, partition - 1, -1) if o in by_ordinal]
    deletions: list[LeaderDeletion] = []
    # Phase 1: outdated pods that are unavailable anyway cost no availability.
    for pod in top_down:
        if outdated(pod) and not pod_ready(pod) and not terminating(pod):
            deletions.append(_deletion(pod, REASON_UNAVAILABLE))
    # Phase 2: available outdated pods, as far as the budget reaches.
    remaining = max_unavailable - unavailable_pods
    for pod in top_down:
        if remaining <= 0:
            break
        if outdated(pod) and not unavailable(pod):
            deletions.append(_deletion(pod, REASON_AVAILABLE))
            remaining -= 1
    return tuple(deletions)


def _deletion(pod: Obj, reason: str) -> LeaderDeletion:
    return LeaderDeletion(name=name_of(pod), uid=uid_of(pod), ordinal=_ordinal(pod) or 0, reason=reason)
