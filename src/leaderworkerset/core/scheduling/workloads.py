"""The `kubernetes` scheduler provider's objects: one `scheduling.k8s.io/v1beta1`
Workload per LeaderWorkerSet, and runtime PodGroups at the active level (whole set, replica, role).

Everything here is pure: names, the desired Workload and PodGroups, the PodGroup a pod joins, and
the drift rules (only gang `minCount` and labels may change on an existing object; any other
difference is immutable drift the controller reports rather than overwrites).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import (
    MutableObj,
    annotations_of,
    controller_owner,
    labels_of,
    lws_owner_reference,
    name_of,
    namespace_of,
    same_controller,
    uid_of,
)
from leaderworkerset.core.scheduling.gang import SchedulingError
from leaderworkerset.core.scheduling.mode import SchedulingModeError, scheduling_mode

SCHEDULING_API_VERSION = "scheduling.k8s.io/v1beta1"
WORKLOAD_KIND = "Workload"
POD_GROUP_KIND = "PodGroup"
_DNS1123_SUBDOMAIN_MAX = 253
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery rand.SafeEncodeString
LEAF_FIELDS = ("schedulingConstraints", "disruptionMode", "resourceClaims")

# Leaf fields the API server keeps only while their feature gate is on, and the gate. With it off it
# drops them from a Workload on create and update without an error (kube-apiserver
# pkg/registry/scheduling/workload/strategy.go, 1.37 and 1.38), so PodGroups made from that Workload
# would go without them: per-pod claims instead of one per group, no topology constraint.
GATED_LEAF_FIELDS = {
    "resourceClaims": "DRAWorkloadResourceClaims",
    "schedulingConstraints": "TopologyAwareWorkloadScheduling",
}


# ----- names -----------------------------------------------------------------------------------------


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in text)


def workload_name(lws_name: str, lws_uid: str) -> str:
    """`<name>-<uidHash>`: FNV-32a of the UID as `dump.ForHash` prints it, safe-encoded."""
    digest = _fnv32a(f"(types.UID){lws_uid}".encode())
    suffix = _safe_encode(str(digest))
    return f"{lws_name[: _DNS1123_SUBDOMAIN_MAX - len(suffix) - 1]}-{suffix}"


def runtime_name(workload: str, *parts: str) -> str:
    """A PodGroup name: the Workload's prefix (truncated to fit 253), its hash, then `parts`."""
    prefix, sep, identity = workload.rpartition("-")
    if not sep or not prefix:
        prefix, identity = workload, ""
    suffix = "-".join([identity, *parts] if identity else list(parts))
    return f"{prefix[: _DNS1123_SUBDOMAIN_MAX - len(suffix) - 1]}-{suffix}"


def lws_workload_name(lws: MutableObj) -> str:
    return workload_name(name_of(lws), uid_of(lws))


def pod_group_name_for_pod(pod: MutableObj) -> str | None:
    """The PodGroup the pod webhook assigns (`spec.schedulingGroup.podGroupName`); None = not WAS.

    Raises ValueError for an unknown mode annotation.
    """
    annotations, labels = annotations_of(pod), labels_of(pod)
    mode = annotations.get(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING, "")
    if not mode:
        return None
    if mode == c.WORKLOAD_AWARE_SCHEDULING_LEGACY_TRUE:
        mode = c.SCHEDULING_MODE_REPLICA
    workload = annotations.get(c.ANNOTATION_WORKLOAD_NAME) or labels.get(c.LABEL_SET_NAME, "")
    index = labels.get(c.LABEL_GROUP_INDEX, "")
    revision = labels.get(c.LABEL_TEMPLATE_REVISION_HASH, "")
    if mode == c.SCHEDULING_MODE_LWS:
        return runtime_name(workload, c.WORKLOAD_TEMPLATE_LWS)
    if mode == c.SCHEDULING_MODE_REPLICA:
        return runtime_name(workload, index, revision)
    if mode == c.SCHEDULING_MODE_ROLE:
        leader = labels.get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX
        role = c.WORKLOAD_TEMPLATE_LEADER if leader else c.WORKLOAD_TEMPLATE_WORKER
        return runtime_name(workload, index, role, revision)
    raise ValueError(f"unsupported workload-aware scheduling mode {mode!r}")


def inject_scheduling_group(pod: MutableObj) -> None:
    """Pod webhook (kubernetes provider): set `spec.schedulingGroup.podGroupName` for WAS pods."""
    name = pod_group_name_for_pod(pod)
    if name is not None:
        pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": name}


def scheduling_template_annotations(lws: MutableObj) -> dict[str, str]:
    """Annotations on leader and worker pod templates when `spec.scheduling` is set (else none):
    the mode and the Workload name, because the pod webhook sees only the pod."""
    if scheduling_spec(lws).get("scheduling") is None:
        return {}
    try:
        mode = scheduling_mode(scheduling_spec(lws).get("scheduling") or {})
    except SchedulingModeError:
        mode = c.SCHEDULING_MODE_REPLICA
    return {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: mode, c.ANNOTATION_WORKLOAD_NAME: lws_workload_name(lws)}


# ----- the Workload ----------------------------------------------------------------------------------


def scheduling_spec(lws: MutableObj) -> MutableObj:
    spec: MutableObj = lws.get("spec") or {}
    return spec


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def mode_of(lws: MutableObj) -> str:
    """The active level; an ambiguous one is an InvalidSchedulingConfiguration."""
    try:
        return scheduling_mode(scheduling_spec(lws).get("scheduling") or {})
    except SchedulingModeError as err:
        raise SchedulingError(c.REASON_INVALID_SCHEDULING_CONFIGURATION, str(err)) from err


def _priorities(lws: MutableObj) -> tuple[str, str]:
    lwt = scheduling_spec(lws).get("leaderWorkerTemplate") or {}
    worker = ((lwt.get("workerTemplate") or {}).get("spec") or {}).get("priorityClassName") or ""
    leader_template = lwt.get("leaderTemplate")
    leader = (
        worker
        if leader_template is None
        else ((leader_template.get("spec") or {}).get("priorityClassName") or "")
    )
    return str(leader), str(worker)


def _lower_policy(policy: object) -> MutableObj | None:
    """A composite policy (basic | gang{minGroupCount}) as a leaf one; minGroupCount never maps."""
    if not isinstance(policy, Mapping):
        return None
    lowered: MutableObj = {}
    if policy.get("basic") is not None:
        lowered["basic"] = {}
    if policy.get("gang") is not None:
        lowered["gang"] = {}
    return lowered


def _template(
    name: str,
    level: Mapping[str, Any],
    policy: MutableObj | None,
    default_gang: bool,
    min_count: int,
    priority: str,
) -> MutableObj:
    """One podGroupTemplate: the level's policy (or the default), gang minCount derived if unset."""
    if policy is None or (policy.get("basic") is None and policy.get("gang") is None):
        policy = {"gang": {}} if default_gang else {"basic": {}}
    policy = copy.deepcopy(policy)
    if policy.get("basic") is not None:
        policy = {"basic": {}}
    else:
        gang = dict(policy.get("gang") or {})
        gang.setdefault("minCount", min_count)
        policy = {"gang": gang}
    template: MutableObj = {"name": name, "schedulingPolicy": policy}
    for field in LEAF_FIELDS:
        value = level.get(field)
        if value:
            template[field] = copy.deepcopy(value)
    if priority:
        template["priorityClassName"] = priority
    return template


def workload_templates(lws: MutableObj) -> list[MutableObj]:
    """The podGroupTemplates of the active level."""
    spec = scheduling_spec(lws)
    scheduling = spec.get("scheduling") or {}
    size = _int((spec.get("leaderWorkerTemplate") or {}).get("size"), 1)
    replicas = _int(spec.get("replicas"), 1)
    leader_priority, worker_priority = _priorities(lws)
    mode = mode_of(lws)
    if mode == c.SCHEDULING_MODE_LWS:
        policy = _lower_policy(scheduling.get("schedulingPolicy"))
        # The template stays valid at zero replicas; no PodGroup exists until scale-up.
        count = replicas * size or 1
        return [_template(c.WORKLOAD_TEMPLATE_LWS, scheduling, policy, False, count, leader_priority)]
    replica = scheduling.get("replica") or {}
    if mode == c.SCHEDULING_MODE_REPLICA:
        policy = _lower_policy(replica.get("schedulingPolicy"))
        return [_template(c.WORKLOAD_TEMPLATE_REPLICA, replica, policy, True, size, leader_priority)]
    leader = replica.get("leader") or {}
    worker = replica.get("worker") or {}
    return [
        _template(
            c.WORKLOAD_TEMPLATE_LEADER, leader, leader.get("schedulingPolicy"), False, 1, leader_priority
        ),
        _template(
            c.WORKLOAD_TEMPLATE_WORKER,
            worker,
            worker.get("schedulingPolicy"),
            False,
            size - 1,
            worker_priority,
        ),
    ]


def desired_workload(lws: MutableObj) -> MutableObj:
    return {
        "apiVersion": SCHEDULING_API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": {
            "name": lws_workload_name(lws),
            "namespace": namespace_of(lws),
            "labels": {c.LABEL_SET_NAME: name_of(lws)},
            "ownerReferences": [lws_owner_reference(lws)],
        },
        "spec": {
            "controllerRef": {"apiGroup": c.LWS_GROUP, "kind": c.LWS_KIND, "name": name_of(lws)},
            "podGroupTemplates": workload_templates(lws),
        },
    }


def controller_ref_names(workload: MutableObj, api_group: str, owner: Mapping[str, Any]) -> bool:
    """`spec.controllerRef` names `owner` (an empty apiGroup, the core group, may be omitted)."""
    ref = (workload.get("spec") or {}).get("controllerRef") or {}
    return (
        (ref.get("apiGroup") or "") == api_group
        and ref.get("kind") == owner.get("kind")
        and ref.get("name") == owner.get("name")
    )


def controlled_by(workload: MutableObj, lws: MutableObj) -> bool:
    """Both the ownerReference and `spec.controllerRef` name this LWS incarnation."""
    lws_owner = lws_owner_reference(lws)
    return same_controller(controller_owner(workload), lws_owner) and controller_ref_names(
        workload, c.LWS_GROUP, lws_owner
    )


def find_owned_workload(candidates: list[MutableObj], lws: MutableObj) -> MutableObj | None:
    """The one Workload this LWS controls among `candidates` (from the controller-UID index)."""
    owned = [w for w in candidates if controlled_by(w, lws)]
    if len(owned) > 1:
        raise SchedulingError(
            c.REASON_WORKLOAD_CREATE_FAILED,
            f"multiple Workloads are controlled by LeaderWorkerSet {namespace_of(lws)}/{name_of(lws)} "
            f"UID {uid_of(lws)!r}",
        )
    return owned[0] if owned else None


def drift(kind: str, obj: MutableObj, what: str = "") -> SchedulingError:
    detail = f" in template {what!r}" if what else ""
    return SchedulingError(
        c.REASON_INVALID_SCHEDULING_CONFIGURATION,
        f"{kind} {namespace_of(obj)}/{name_of(obj)} has immutable scheduling configuration drift{detail}",
    )


def dropped_by_server(sent: MutableObj, stored: MutableObj) -> SchedulingError | None:
    """The error naming the first gated field of `sent` that `stored` (what the API server kept of
    it) lacks, with the gate to turn on; None when every field survived."""
    kept = {t.get("name"): t for t in (stored.get("spec") or {}).get("podGroupTemplates") or []}
    for template in sent["spec"]["podGroupTemplates"]:
        for field, gate in GATED_LEAF_FIELDS.items():
            if template.get(field) and not (kept.get(template["name"]) or {}).get(field):
                return SchedulingError(
                    c.REASON_INVALID_SCHEDULING_CONFIGURATION,
                    f"Workload {namespace_of(stored)}/{name_of(stored)}: the API server dropped "
                    f"podGroupTemplates[{template['name']}].{field} because its feature gate {gate} is off; "
                    f"turn {gate} on in kube-apiserver, kube-controller-manager and kube-scheduler, then "
                    "delete the Workload to have it made again (no PodGroup is made without the field)",
                )
    return None


def merged_labels(current: MutableObj, desired: MutableObj) -> dict[str, str] | None:
    labels = labels_of(current)
    merged = {**labels, **labels_of(desired)}
    return merged if merged != labels else None


def _policy_kind(template: Mapping[str, Any]) -> tuple[bool, bool]:
    policy = template.get("schedulingPolicy") or {}
    return policy.get("basic") is not None, policy.get("gang") is not None


def workload_update(current: MutableObj, desired: MutableObj, lws: MutableObj) -> MutableObj | None:
    """The updated Workload when only minCount/labels differ; None when equal; raises on drift."""
    if not controlled_by(current, lws):
        raise SchedulingError(
            c.REASON_INVALID_SCHEDULING_CONFIGURATION,
            f"Workload {namespace_of(current)}/{name_of(current)} is not controlled by the expected "
            "LeaderWorkerSet UID",
        )
    dropped = dropped_by_server(desired, current)
    if dropped is not None:
        raise dropped
    updated = copy.deepcopy(current)
    templates = (updated.get("spec") or {}).get("podGroupTemplates") or []
    by_name = {t.get("name"): t for t in templates}
    wanted = desired["spec"]["podGroupTemplates"]
    if len(templates) != len(wanted) or any(t["name"] not in by_name for t in wanted):
        raise SchedulingError(
            c.REASON_INVALID_SCHEDULING_CONFIGURATION,
            f"Workload {namespace_of(current)}/{name_of(current)} has immutable PodGroup template set drift",
        )
    changed = False
    for want in wanted:
        have = by_name[want["name"]]
        same = _policy_kind(have) == _policy_kind(want) and all(
            have.get(f) == want.get(f) for f in (*LEAF_FIELDS, "priorityClassName")
        )
        if not same:
            raise drift("Workload", current, want["name"])
        have_gang = (have.get("schedulingPolicy") or {}).get("gang")
        want_gang = want["schedulingPolicy"].get("gang")
        if (
            have_gang is not None
            and want_gang is not None
            and have_gang.get("minCount") != want_gang.get("minCount")
        ):
            have_gang["minCount"] = want_gang.get("minCount")
            changed = True
    labels = merged_labels(current, desired)
    if labels is not None:
        updated["metadata"]["labels"] = labels
        changed = True
    return updated if changed else None


# ----- PodGroups -------------------------------------------------------------------------------------
