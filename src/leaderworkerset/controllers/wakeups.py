"""Which pod and worker-StatefulSet updates can change what the pod and LWS controllers decide (issue 25).

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
  caller keeps awake. The leader's binding still wakes it: exclusive placement waits for the leader's
  node.
- a worker StatefulSet's status counts moving without its readiness changing (both controllers): the
  leader's reconcile reads the worker StatefulSet's existence, metadata and readiness (startup, Hash
  identity's group-ready condition), the set's reads its readiness and revision (status, rollout),
  never its counts, which again only the opt-in diagnosis reports. The one exception is the
  updated count of a StatefulSet whose partition is held: an in-place update waits for it.

Adds and deletes always wake (runtime/controller.py applies a filter to updates only).
"""

from __future__ import annotations

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import statefulset_ready
from leaderworkerset.core.observe.diagnosis import POD_SCHEDULED
from leaderworkerset.runtime.projections import Pod, StatefulSet

# Copied from the node onto the pod at binding by the API server (PodTopologyLabels admission).
_BINDING_LABEL_PREFIX = "topology.kubernetes.io/"


def worker_statefulset_update_matters(old: StatefulSet, new: StatefulSet) -> bool:
    """False when only the status counts moved and the StatefulSet is as ready (or unready) as before.

    The observed generation and the revisions always matter: an in-place update waits for the
    StatefulSet controller to publish the revision of a template it patched."""
    if old.spec != new.spec or not _same_metadata(old, new):
        return True
    before, after = old.status, new.status
    if (before.observedGeneration, before.currentRevision, before.updateRevision) != (
        after.observedGeneration,
        after.currentRevision,
        after.updateRevision,
    ):
        return True
    if _partition(new) and before.updatedReplicas != after.updatedReplicas:
        # A held partition is an in-place update's: it is released once the StatefulSet controller
        # counts the pods we labelled (core/rollout/inplaceupdate.statefulset_counts_labelled).
        return True
    return statefulset_ready(msgspec.to_builtins(old)) != statefulset_ready(msgspec.to_builtins(new))


def set_statefulset_update_matters(old: StatefulSet, new: StatefulSet) -> bool:
    """For the LWS controller: every update of a leader StatefulSet (its status drives rollouts), a
    worker StatefulSet's as `worker_statefulset_update_matters` says."""
    meta = new.metadata
    return (meta.labels or {}).get(c.LABEL_SET_NAME) == meta.name or worker_statefulset_update_matters(
        old, new
    )


def pod_update_matters(old: Pod, new: Pod) -> bool:
    """False when the update only binds a worker pod that was never unschedulable to a node, or
    changes nothing the cache keeps (the projection) but the resource version."""
    if _same_metadata(old, new) and old.spec == new.spec and old.status == new.status:
        return False
    labels = new.metadata.labels or {}
    if c.LABEL_WORKER_INDEX not in labels or labels[c.LABEL_WORKER_INDEX] == c.LEADER_WORKER_INDEX:
        return True
    if old.spec.nodeName or not new.spec.nodeName or _scheduled_condition(old):
        return True
    conditions = [cond for cond in new.status.conditions or () if cond.type != POD_SCHEDULED]
    if conditions != list(old.status.conditions or ()):
        return True
    old_labels = old.metadata.labels or {}
    if {
        k: v for k, v in labels.items() if k in old_labels or not k.startswith(_BINDING_LABEL_PREFIX)
    } != old_labels:
        return True
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
    return unbound != old


def _partition(sts: StatefulSet) -> int:
    strategy = sts.spec.updateStrategy
    rolling = strategy.rollingUpdate if strategy is not None else None
    return (rolling.partition or 0) if rolling is not None else 0


def _same_metadata(old: Pod | StatefulSet, new: Pod | StatefulSet) -> bool:
    return msgspec.structs.replace(new.metadata, resourceVersion=old.metadata.resourceVersion) == old.metadata


def _scheduled_condition(pod: Pod) -> bool:
    return any(cond.type == POD_SCHEDULED for cond in pod.status.conditions or ())
