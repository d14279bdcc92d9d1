"""Which pod and worker-StatefulSet updates can change what the pod and LWS controllers decide.

Creating a group brings each of its pods an add, a binding to a node and a start, and its worker
StatefulSet four or five status updates, each of which used to cost a pod reconcile and (merged over
0.1 s) LWS rounds. Upstream's watches let all of them through too; its one worker per controller
likely merges many while they wait in its queue, where ours take each key at once: in a 100-group
create our pod controller ran twice upstream's rounds (docs/benchmarks.md).
These updates are dropped, because nothing a reconcile reads from them can
differ (nor from any update that changes nothing the cache keeps, the projection, but the resource
version):

- a worker pod being bound to a node (pod controller): the reconcile of a worker applies the restart
  policy (its phase, container statuses, deletion, annotations) and observes readiness; the node it
  runs on is read only when it fails (quarantine) and by the opt-in not-ready diagnosis, which the
  caller keeps awake. A leader's binding wakes it only where exclusive placement waits for the
  leader's node (the set has the exclusive-topology annotation, or is not cached).
- a worker StatefulSet's status counts moving without its readiness changing (both controllers): the
  leader's reconcile reads the worker StatefulSet's existence, metadata and readiness (startup, Hash
  identity's group-ready condition), the set's reads its readiness and revision (status, rollout),
  never its counts, which again only the opt-in diagnosis reports. The one exception, for leader
  StatefulSets too, is the updated count of a StatefulSet whose partition is held: an in-place
  update waits for it.

- a leader pod being bound to a node (LWS controller, `set_pod_update_matters`): a set's rounds
  read their leaders' readiness, revision, annotations and deletion, and (surge fallback) whether
  they are unschedulable, never the node a schedulable leader went to.

- any add or update of an idle worker (pod controller, `idle_worker`): one that is not ready, not
  leaving, holds no finalizer and none of whose containers ever restarted. A worker's reconcile
  applies the restart policy, which only a restart or a deletion triggers, releases a retained
  group's finalizers, and observes the group's time to ready once the pod is ready; for an idle
  worker it decides nothing. So a worker's add and its start cost nothing: at 20,000 cluster pods
  (2,500 groups of 4) our pod controller ran 20,420 reconciles against upstream's 7,329, whose
  single worker merges events a backlog holds.

Deletes always wake; adds wake unless they are the echo of the LWS controller's own leader StatefulSet or
Deployment create (leaderworkerset/setup.py), or of an idle worker.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import pod_ready, statefulset_ready
from leaderworkerset.core.lifecycle.restart import restart_total
from leaderworkerset.core.observe.diagnosis import POD_SCHEDULED
from leaderworkerset.runtime.projections import Pod, StatefulSet

# Copied from the node onto the pod at binding by the API server (PodTopologyLabels admission).
_BINDING_LABEL_PREFIX = "topology.kubernetes.io/"


def worker_statefulset_update_matters(old: StatefulSet, new: StatefulSet) -> bool:
    """False when only the status moved and the StatefulSet is as ready (or unready) as before.

    The observed generation and the revisions matter once the template was changed (generation
    above 1): an in-place update waits for the StatefulSet controller to publish the revision of a
    template it patched. Worker StatefulSets are otherwise create-only, so at generation 1 their
    first revisions are only the controller catching up with the creation."""
    if old.spec != new.spec or not _same_metadata(old, new) or _revisions_moved(old, new):
        return True
    if _held_count_moved(old, new):
        return True
    return statefulset_ready(msgspec.to_builtins(old)) != statefulset_ready(msgspec.to_builtins(new))


def set_statefulset_update_matters(old: StatefulSet, new: StatefulSet) -> bool:
    """For the LWS controller: a worker StatefulSet's update as `worker_statefulset_update_matters`
    says; a leader StatefulSet's unless only counts the set never reads moved. A round reads the
    leader StatefulSet's spec, metadata, `replicas` (the set's own) and revisions (leader
    replacement, in-place updates) and its observed generation (in-place) once its template changed,
    as for a worker StatefulSet; never its ready, available, current or updated counts: the set's
    readiness comes from its leader pods, which wake it."""
    meta = new.metadata
    if (meta.labels or {}).get(c.LABEL_SET_NAME) != meta.name:
        return worker_statefulset_update_matters(old, new)
    if old.spec != new.spec or not _same_metadata(old, new) or _revisions_moved(old, new):
        return True
    return old.status.replicas != new.status.replicas or _held_count_moved(old, new)


def _held_count_moved(old: StatefulSet, new: StatefulSet) -> bool:
    """The updated count of a StatefulSet whose partition is held moved. Only an in-place update
    holds a partition at a count we wait on: it is released once the StatefulSet controller counts
    the pods we relabelled (core/rollout/inplaceupdate/planning.statefulset_counts_labelled)."""
    return bool(_partition(new)) and old.status.updatedReplicas != new.status.updatedReplicas


def _revisions_moved(old: StatefulSet, new: StatefulSet) -> bool:
    """The StatefulSet controller observed a changed template or moved its revisions; at generation
    1 (never changed since its creation) that is only the controller catching up with the creation."""
    before, after = old.status, new.status
    return (new.metadata.generation or 0) > 1 and (
        before.observedGeneration,
        before.currentRevision,
        before.updateRevision,
    ) != (after.observedGeneration, after.currentRevision, after.updateRevision)


def pod_update_matters(
    old: Pod, new: Pod, leader_placement_matters: Callable[[], bool] = lambda: True
) -> bool:
    """False when the update only binds a pod that was never unschedulable to a node (a leader
    only when its set's placement does not wait for it: `leader_placement_matters`), or changes
    nothing the cache keeps (the projection) but the resource version."""
    if _unchanged(old, new):
        return False
    labels = new.metadata.labels or {}
    if c.LABEL_WORKER_INDEX not in labels:
        return True
    if not _only_bound(old, new):
        return True
    return labels[c.LABEL_WORKER_INDEX] == c.LEADER_WORKER_INDEX and leader_placement_matters()


def idle_worker(pod: Pod) -> bool:
    """A worker pod whose reconcile decides nothing (GroupReconciler): not ready (the time to ready
    is observed on readiness), not leaving and no container restarted (the restart policy's only
    triggers, core/lifecycle/restart.restart_triggered), no finalizer (a retained group's are
    released by that reconcile). Its labels must name its set and worker index, or the reconcile
    reports them."""
    meta = pod.metadata
    labels = meta.labels or {}
    if not labels.get(c.LABEL_SET_NAME) or labels.get(c.LABEL_WORKER_INDEX) in (None, c.LEADER_WORKER_INDEX):
        return False
    if meta.deletionTimestamp is not None or meta.finalizers:
        return False
    status = {"status": msgspec.to_builtins(pod.status)}
    return restart_total(status) == 0 and not pod_ready(status)


def set_pod_update_matters(old: Pod, new: Pod) -> bool:
    """For the LWS controller, leaders too: a set's rounds read its leader pods' readiness,
    revision, annotations, deletion and (surge fallback) unschedulability, never the node a pod
    that was always schedulable was bound to (exclusive placement is the pod controller's)."""
    return not (_unchanged(old, new) or _only_bound(old, new))


def _unchanged(old: Pod, new: Pod) -> bool:
    return _same_metadata(old, new) and old.spec == new.spec and old.status == new.status


def _only_bound(old: Pod, new: Pod) -> bool:
    """Whether the update is the binding of a pod that was never unschedulable to a node, and
    nothing else."""
    if old.spec.nodeName or not new.spec.nodeName or _scheduled_condition(old):
        return False
    conditions = [cond for cond in new.status.conditions or () if cond.type != POD_SCHEDULED]
    if conditions != list(old.status.conditions or ()):
        return False
    labels, old_labels = new.metadata.labels or {}, old.metadata.labels or {}
    if {
        k: v for k, v in labels.items() if k in old_labels or not k.startswith(_BINDING_LABEL_PREFIX)
    } != old_labels:
        return False
    # Everything the binding may change put back as it was: anything else that differs matters.
    unbound = msgspec.structs.replace(
        new,
        metadata=msgspec.structs.replace(
            new.metadata, resourceVersion=old.metadata.resourceVersion, labels=old.metadata.labels
        ),
        spec=msgspec.structs.replace(new.spec, nodeName=old.spec.nodeName),
        status=msgspec.structs.replace(
            new.status, hostIP=old.status.hostIP, conditions=old.status.conditions
        ),
    )
    return unbound == old


def _partition(sts: StatefulSet) -> int:
    strategy = sts.spec.updateStrategy
    rolling = strategy.rollingUpdate if strategy is not None else None
    return (rolling.partition or 0) if rolling is not None else 0


def _same_metadata(old: Pod | StatefulSet, new: Pod | StatefulSet) -> bool:
    return msgspec.structs.replace(new.metadata, resourceVersion=old.metadata.resourceVersion) == old.metadata


def _scheduled_condition(pod: Pod) -> bool:
    return any(cond.type == POD_SCHEDULED for cond in pod.status.conditions or ())
