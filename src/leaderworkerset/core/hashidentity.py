"""Hash group identity: leaders in a Deployment, groups keyed by a
random 40-hex group key, readiness through the group-ready gate, replacement through the
group-replacement scheduling gate.

* The leader Deployment `<lws>` carries the leader template of the leader StatefulSet plus the
  group-identity annotation, the shared subdomain and, for size > 1, the `group-ready` readiness
  gate. Because a leader only turns Ready once its workers are, the Deployment's maxSurge and
  maxUnavailable count whole groups.
* The pod controller writes the leader's `group-ready` condition from the worker StatefulSet.
* Every Hash leader is admitted gated (pod webhook). `decide_admission` lifts the gate: the
  desired revision's gated leaders are capped at spec.replicas ungated groups per revision, and
  groups still tearing down hold back as many gated leaders (PostTermination; Immediate only
  counts retained groups), oldest first.
* Status comes from the Deployment.

Pure functions over API-shaped dicts; the controllers do the I/O.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.conditions import (
    Condition,
    apply_conditions,
    format_time,
)
from leaderworkerset.core.desired.statefulsets import leader_statefulset
from leaderworkerset.core.desired.status import (
    StatusPlan,
    condition_event,
    hpa_pod_selector,
    make_condition,
    make_false_condition,
)
from leaderworkerset.core.disruptionbudget.drainsurge import drain_surged
from leaderworkerset.core.groups.state import has_replacement_gate, is_exhausted, is_leader_pod, pod_ready
from leaderworkerset.core.objects import (
    ControllerEvent,
    Obj,
    controller_owner,
    is_deleting,
    labels_of,
    lws_replicas,
    lws_size,
    metadata,
    name_of,
    revision_key_of,
)
from leaderworkerset.core.rollout.partition import rolling_update_configuration
from leaderworkerset.core.scheduling.workloads import scheduling_template_annotations

_APPS_V1 = "apps/v1"
_DEPLOYMENT_KIND = "Deployment"
_ROLLING_UPDATE = "RollingUpdate"
# A deferred leader is looked at again after this long even without an event.
GROUP_REPLACEMENT_REQUEUE_SECONDS = 10.0
REASON_WORKER_STS_READY = "WorkerStatefulSetReady"
REASON_WORKER_STS_NOT_READY = "WorkerStatefulSetNotReady"


# --- the leader Deployment ------------------------------------------------------------------------


def leader_deployment(lws: Obj, *, revision_key: str, drain_surge: int = 0) -> dict[str, Any]:
    """The server-side-apply body of the leader Deployment `<lws>`.

    maxSurge and maxUnavailable are copied verbatim: the Deployment controller scales percentages
    itself. The template is the leader StatefulSet's, so both identities build leaders alike.
    `drain_surge` more leaders replace groups on cordoned nodes first (core/disruptionbudget/drainsurge.py).
    """
    sts = leader_statefulset(
        lws,
        partition=0,
        replicas=lws_replicas(lws),
        revision_key=revision_key,
        extra_template_annotations={
            c.ANNOTATION_GROUP_IDENTITY: c.GROUP_IDENTITY_HASH,
            # The pod webhook names each pod's PodGroup from these (it sees only the pod).
            **scheduling_template_annotations(dict(lws)),
        },
    )
    template = copy.deepcopy(sts["spec"]["template"])
    pod_spec = dict(template.get("spec") or {})
    # A Deployment gives its pods no subdomain; admission overrides it for UniquePerReplica.
    pod_spec["subdomain"] = name_of(lws)
    if lws_size(lws) > 1:
        pod_spec["readinessGates"] = [{"conditionType": c.READINESS_GATE_GROUP_READY}]
    template["spec"] = pod_spec
    config = rolling_update_configuration(lws)
    rolling = {key: config[key] for key in ("maxUnavailable", "maxSurge") if key in config}
    return {
        "apiVersion": _APPS_V1,
        "kind": _DEPLOYMENT_KIND,
        "metadata": sts["metadata"],
        "spec": {
            "replicas": lws_replicas(lws) + drain_surge,
            "selector": sts["spec"]["selector"],
            "template": template,
            "strategy": {"type": _ROLLING_UPDATE, "rollingUpdate": rolling},
        },
    }


# --- the group-ready pod condition ---------------------------------------------------------


def group_ready_status_patch(leader: Obj, workers_ready: bool, now: datetime) -> dict[str, Any] | None:
    """Strategic-merge status patch of the leader's `group-ready` condition (pod conditions merge
    by type, so the kubelet's conditions are untouched); None when it already agrees."""
    status = c.CONDITION_TRUE if workers_ready else c.CONDITION_FALSE
    conditions = [dict(cond) for cond in (leader.get("status") or {}).get("conditions") or []]
    for cond in conditions:
        if cond.get("type") == c.POD_CONDITION_GROUP_READY and cond.get("status") == status:
            return None
    condition = {
        "type": c.POD_CONDITION_GROUP_READY,
        "status": status,
        "reason": REASON_WORKER_STS_READY if workers_ready else REASON_WORKER_STS_NOT_READY,
        "lastTransitionTime": format_time(now),
    }
    return {"status": {"conditions": [condition]}}


# --- the group-replacement gate ------------------------------------------------------------


def _age_key(pod: Obj) -> tuple[str, str]:
    # RFC 3339 timestamps of one API server sort as strings; ties go by name, as upstream.
    return (str(metadata(pod).get("creationTimestamp") or ""), name_of(pod))


def tearing_down_groups(pods: Iterable[Obj]) -> int:
    """Groups that still have pods but no live leader (gone or terminating, not retained)."""
    alive: dict[str, bool] = {}
    for pod in pods:
        key = labels_of(pod).get(c.LABEL_GROUP_INDEX, "")
        if not key:
            owner = controller_owner(pod)
            key = str(owner.get("name")) if owner is not None and not is_leader_pod(pod) else name_of(pod)
        live = is_leader_pod(pod) and not is_deleting(pod) and not is_exhausted(pod)
        alive[key] = alive.get(key, False) or live
    return sum(1 for live in alive.values() if not live)


def retained_groups(pods: Iterable[Obj]) -> int:
    return sum(1 for pod in pods if is_leader_pod(pod) and is_exhausted(pod))


class AdmissionStep(enum.Enum):
    ADMIT = "admit"  # lift the gate (merge patch), record GroupReplacementAdmitted
    DEFER = "defer"  # keep waiting, requeue after 10 s
    DEFER_TEARDOWN = "defer-teardown"  # waiting for terminating groups: record the Deferred event


@dataclass(frozen=True)
class Admission:
    step: AdmissionStep
    blocking: int = 0  # groups this leader waits for (DEFER_TEARDOWN)


def decide_admission(lws: Obj, leader: Obj, pods: Sequence[Obj], desired_revision: str) -> Admission:
    """Whether a gated Hash leader may start scheduling. `pods` are every pod of the set."""
    # Groups replaced ahead of a drain hold their slot until they go: their replacements come on top.
    replicas = lws_replicas(lws) + drain_surged(lws, pods)
    revision = revision_key_of(leader)
    if desired_revision and revision and revision != desired_revision:
        return Admission(AdmissionStep.DEFER)  # an outdated replacement waits for the rollout
    leaders = [p for p in pods if is_leader_pod(p) and revision_key_of(p) == revision]
    retained = sum(1 for p in leaders if is_exhausted(p))
    live = [p for p in leaders if not is_exhausted(p) and not is_deleting(p)]
    admitted = sum(1 for p in live if not has_replacement_gate(p))
    gated = sorted((p for p in live if has_replacement_gate(p)), key=_age_key)
    rank = next((i for i, p in enumerate(gated) if name_of(p) == name_of(leader)), -1)
    if rank == -1 or admitted + retained + rank >= replicas:
        return Admission(AdmissionStep.DEFER)  # no more than spec.replicas groups per revision
    immediate = (lws.get("spec") or {}).get("groupReplacementPolicy") == c.GROUP_REPLACEMENT_IMMEDIATE
    blocking = retained_groups(pods) if immediate else tearing_down_groups(pods)
    if blocking > 0:
        waiting = sorted(
            (p for p in pods if is_leader_pod(p) and not is_deleting(p) and has_replacement_gate(p)),
            key=lambda p: (bool(desired_revision) and revision_key_of(p) != desired_revision, *_age_key(p)),
        )
        order = next((i for i, p in enumerate(waiting) if name_of(p) == name_of(leader)), -1)
        if order == -1 or order >= len(waiting) - blocking:
            return Admission(AdmissionStep.DEFER_TEARDOWN, blocking)
    return Admission(AdmissionStep.ADMIT)


def remove_gate_patch(leader: Obj) -> dict[str, Any]:
    """Merge patch lifting only our gate; the deletion-cost hint goes with it (admitted leaders
    are no cheaper to delete than any other)."""
    gates = [
        dict(g)
        for g in (leader.get("spec") or {}).get("schedulingGates") or []
        if g.get("name") != c.SCHEDULING_GATE_GROUP_REPLACEMENT
    ]
    patch: dict[str, Any] = {"spec": {"schedulingGates": gates or None}}
    annotations = metadata(leader).get("annotations") or {}
    if annotations.get(c.ANNOTATION_POD_DELETION_COST) == c.POD_DELETION_COST_WAITING_LEADER:
        patch["metadata"] = {"annotations": {c.ANNOTATION_POD_DELETION_COST: None}}
    return patch


def admission_event(leader: Obj, admission: Admission) -> ControllerEvent | None:
    related = ("Pod", name_of(leader))
    if admission.step is AdmissionStep.ADMIT:
        message = c.MSG_GROUP_REPLACEMENT_ADMITTED % name_of(leader)
        return ControllerEvent(
            c.EVENT_TYPE_NORMAL, c.EVENT_GROUP_REPLACEMENT_ADMITTED, c.EVENT_ACTION_UPDATE, message, related
        )
    if admission.step is AdmissionStep.DEFER_TEARDOWN:
        message = c.MSG_GROUP_REPLACEMENT_DEFERRED % (name_of(leader), admission.blocking)
        return ControllerEvent(
            c.EVENT_TYPE_NORMAL, c.EVENT_GROUP_REPLACEMENT_DEFERRED, c.EVENT_ACTION_UPDATE, message, related
        )
    return None


# --- status ---------------------------------------------------------------------------------


def _deploy_status(deploy: Obj) -> Mapping[str, Any]:
    status: Mapping[str, Any] = deploy.get("status") or {}
    return status


def hash_conditions(
    lws: Obj, deploy: Obj, leader_pods: Sequence[Obj], now: datetime
) -> tuple[list[Condition], bool, int]:
    """(desired conditions, available, ready count for the event) from the Deployment (B7)."""
    generation = int((lws.get("metadata") or {}).get("generation") or 0)
    replicas = lws_replicas(lws)
    status = _deploy_status(deploy)
    deploy_replicas = int(status.get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    updated = int(status.get("updatedReplicas") or 0)
    deploy_revision = revision_key_of(deploy)
    current = sum(1 for p in leader_pods if deploy_revision and revision_key_of(p) == deploy_revision)
    old = sum(
        1
        for p in leader_pods
        if deploy_revision and revision_key_of(p) != deploy_revision and not is_deleting(p)
    )
    degraded = sum(1 for p in leader_pods if is_exhausted(p))
    degraded_ready = sum(1 for p in leader_pods if is_exhausted(p) and not is_deleting(p) and pod_ready(p))
    deploy_generation = int((deploy.get("metadata") or {}).get("generation") or 0)
    deployment_current = int(status.get("observedGeneration") or 0) >= deploy_generation and (
        not deploy_revision or (old == 0 and (not leader_pods or current >= replicas))
    )
    updating = not deployment_current or updated < deploy_replicas
    ready_non_degraded = max(0, ready - degraded_ready)
    # A group being replaced ahead of a drain is one leader more for a while, not a rollout.
    extra = drain_surged(lws, leader_pods)
    available = (
        deployment_current
        and not degraded
        and replicas <= deploy_replicas <= replicas + extra
        and ready_non_degraded >= replicas
        and updated >= replicas
    )
    progressing = (updating and not degraded) or ready_non_degraded + degraded < max(
        replicas, deploy_replicas
    )

    def true(t: str) -> Condition:
        return make_condition(t, generation, now)

    def false(t: str) -> Condition:
        return make_false_condition(t, generation, now)

    progress = true(c.CONDITION_PROGRESSING) if progressing else false(c.CONDITION_PROGRESSING)
    conditions: list[Condition]
    if updating:
        conditions = [false(c.CONDITION_AVAILABLE)] if degraded else []
        conditions += [true(c.CONDITION_UPDATE_IN_PROGRESS), progress]
    elif available:
        conditions = [true(c.CONDITION_AVAILABLE)]
    elif degraded:
        conditions = [false(c.CONDITION_AVAILABLE), progress, false(c.CONDITION_UPDATE_IN_PROGRESS)]
    else:
        conditions = [true(c.CONDITION_PROGRESSING)]
    conditions.append(true(c.CONDITION_DEGRADED) if degraded else false(c.CONDITION_DEGRADED))
    return conditions, available, ready


def plan_hash_status(lws: Obj, deploy: Obj, leader_pods: Sequence[Obj], now: datetime) -> StatusPlan:
    """The Hash LWS status: counts copied from the Deployment, conditions from the Deployment's."""
    meta = lws.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    old: Mapping[str, Any] = lws.get("status") or {}
    status: dict[str, Any] = copy.deepcopy(dict(old))
    deploy_status = _deploy_status(deploy)
    for field in ("replicas", "readyReplicas", "updatedReplicas"):
        status[field] = int(deploy_status.get(field) or 0)
    status["observedGeneration"] = generation
    if not status.get("hpaPodSelector"):
        status["hpaPodSelector"] = hpa_pod_selector(str(meta.get("name") or ""))
    desired, available, ready = hash_conditions(lws, deploy, leader_pods, now)
    conditions, changed = apply_conditions(old.get("conditions") or [], desired, generation, now)
    if conditions:
        status["conditions"] = conditions
    degraded = desired[-1]["status"] == c.CONDITION_TRUE
    reported = desired[-1] if degraded else desired[0]
    event = condition_event(reported, ready, lws_replicas(lws)) if changed else None
    fields = ("replicas", "readyReplicas", "updatedReplicas", "observedGeneration", "hpaPodSelector")
    counts_changed = any(old.get(f) != status.get(f) for f in fields)
    return StatusPlan(status, changed or counts_changed, available, event)
