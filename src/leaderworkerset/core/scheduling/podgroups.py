"""The PodGroups of the Kubernetes Workload API (scheduling.k8s.io/v1beta1) for a LeaderWorkerSet's
groups: which ones should exist, the object for each, when to update or delete one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.objects import (
    MutableObj,
    controller_owner,
    controller_reference,
    is_deleting,
    is_hash,
    labels_of,
    lws_owner_reference,
    name_of,
    namespace_of,
    same_controller,
    uid_of,
)
from leaderworkerset.core.scheduling.gang import SchedulingError
from leaderworkerset.core.scheduling.workloads import (
    LEAF_FIELDS,
    POD_GROUP_KIND,
    SCHEDULING_API_VERSION,
    WORKLOAD_KIND,
    drift,
    lws_workload_name,
    merged_labels,
    mode_of,
    runtime_name,
    scheduling_spec,
)


@dataclass(frozen=True)
class DesiredPodGroup:
    name: str
    template: str
    labels: dict[str, str]
    allow_min_count_update: bool = False


def _base_labels(lws: MutableObj, mode: str) -> dict[str, str]:
    return {c.LABEL_SET_NAME: name_of(lws), c.LABEL_SCHEDULING_LEVEL: mode}


def replica_pod_groups(lws: MutableObj, mode: str, group_index: str, revision: str) -> list[DesiredPodGroup]:
    """One replica's PodGroups: one in replica mode, leader + worker in role mode."""
    workload = lws_workload_name(lws)
    labels = {
        **_base_labels(lws, mode),
        c.LABEL_GROUP_INDEX: group_index,
        c.LABEL_TEMPLATE_REVISION_HASH: revision,
    }
    if mode == c.SCHEDULING_MODE_REPLICA:
        return [
            DesiredPodGroup(
                runtime_name(workload, group_index, revision), c.WORKLOAD_TEMPLATE_REPLICA, labels
            )
        ]
    return [
        DesiredPodGroup(
            runtime_name(workload, group_index, role, revision), role, {**labels, c.LABEL_ROLE: role}
        )
        for role in (c.WORKLOAD_TEMPLATE_LEADER, c.WORKLOAD_TEMPLATE_WORKER)
    ]


def desired_pod_groups(lws: MutableObj, replicas: int, revision: str) -> list[DesiredPodGroup]:
    """PodGroups the LWS controller keeps: the whole-set one, or one set per Ordinal group index.

    Hash groups are keyed by a token drawn at admission, so their PodGroups come from the pod
    controller (`leader_pod_groups`), not from here.
    """
    mode = mode_of(lws)
    if mode == c.SCHEDULING_MODE_LWS:
        if replicas <= 0:
            return []
        name = runtime_name(lws_workload_name(lws), c.WORKLOAD_TEMPLATE_LWS)
        return [
            DesiredPodGroup(
                name, c.WORKLOAD_TEMPLATE_LWS, _base_labels(lws, mode), allow_min_count_update=True
            )
        ]
    if is_hash(lws):
        return []
    return [g for i in range(replicas) for g in replica_pod_groups(lws, mode, str(i), revision)]


def leader_pod_groups(lws: MutableObj, leader: MutableObj) -> list[DesiredPodGroup]:
    """Hash identity, replica/role modes: the PodGroups of the leader's group."""
    if scheduling_spec(lws).get("scheduling") is None or not is_hash(lws):
        return []
    mode = mode_of(lws)
    if mode == c.SCHEDULING_MODE_LWS:
        return []
    labels = labels_of(leader)
    for key in (c.LABEL_GROUP_INDEX, c.LABEL_TEMPLATE_REVISION_HASH):
        if not labels.get(key):
            raise SchedulingError(
                c.REASON_INVALID_SCHEDULING_CONFIGURATION,
                f"leader pod {namespace_of(leader)}/{name_of(leader)} has no {key} label",
            )
    return replica_pod_groups(lws, mode, labels[c.LABEL_GROUP_INDEX], labels[c.LABEL_TEMPLATE_REVISION_HASH])


def live_group_pod_group_names(lws: MutableObj, pods: list[MutableObj]) -> set[str]:
    """Hash: the PodGroups of every group whose leader is alive, which cleanup must keep even
    before any pod names them (in role mode the worker PodGroup waits for workers that only
    come once the leader is admitted)."""
    names: set[str] = set()
    for pod in pods:
        if is_deleting(pod) or not is_leader_pod(pod):
            continue
        try:
            names.update(g.name for g in leader_pod_groups(lws, pod))
        except SchedulingError:
            continue  # a leader without its labels names no PodGroup
    return names


def workload_owner_ref(workload: MutableObj) -> MutableObj:
    """A plain (non-controller) owner: the PodGroup goes away with the Workload."""
    ref = controller_reference(workload, SCHEDULING_API_VERSION, WORKLOAD_KIND, block_owner_deletion=False)
    return {**ref, "controller": False}


def materialize_pod_group(
    lws: MutableObj, workload: MutableObj, group: DesiredPodGroup, template_name: str | None = None
) -> MutableObj:
    """A runtime PodGroup from the persisted Workload's template (workloadbuilder.NewPodGroup).

    `template_name` overrides the template (delegation to a parent's Workload); a delegated group
    carries no ownerReference to the parent's Workload.
    """
    name = template_name or group.template
    templates = {t.get("name"): t for t in (workload.get("spec") or {}).get("podGroupTemplates") or []}
    template = templates.get(name)
    if template is None:
        raise SchedulingError(
            c.REASON_INVALID_SCHEDULING_CONFIGURATION,
            f"materialize PodGroup {group.name!r}: Workload {name_of(workload)} has no template {name!r}",
        )
    spec: MutableObj = {
        "workloadRef": {"workloadName": name_of(workload), "templateName": name},
        "schedulingPolicy": copy.deepcopy(template.get("schedulingPolicy") or {}),
    }
    for field in (*LEAF_FIELDS, "priorityClassName"):
        if template.get(field):
            spec[field] = copy.deepcopy(template[field])
    owners = [lws_owner_reference(lws)]
    if template_name is None and uid_of(workload):
        owners.append(workload_owner_ref(workload))
    return {
        "apiVersion": SCHEDULING_API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": {
            "name": group.name,
            "namespace": namespace_of(lws),
            "labels": dict(group.labels),
            "ownerReferences": owners,
        },
        "spec": spec,
    }


_SERVER_DEFAULTED = ("priority", "preemptionPolicy")


def _comparable_spec(spec: Mapping[str, Any]) -> MutableObj:
    result = {k: v for k, v in spec.items() if k not in _SERVER_DEFAULTED and v not in (None, [], {})}
    result.setdefault("disruptionMode", {"single": {}})
    return result


def pod_group_update(
    current: MutableObj, desired: MutableObj, *, allow_min_count_update: bool
) -> MutableObj | None:
    """The updated PodGroup when only minCount/labels/Workload owner differ; None when equal."""
    updated = copy.deepcopy(current)
    have = _comparable_spec(updated.get("spec") or {})
    want = _comparable_spec(desired.get("spec") or {})
    changed = False
    have_gang = (have.get("schedulingPolicy") or {}).get("gang")
    want_gang = (want.get("schedulingPolicy") or {}).get("gang")
    if allow_min_count_update and have_gang is not None and want_gang is not None:
        if have_gang.get("minCount") != want_gang.get("minCount"):
            updated["spec"]["schedulingPolicy"]["gang"]["minCount"] = want_gang.get("minCount")
            changed = True
        have = copy.deepcopy(have)
        have["schedulingPolicy"]["gang"]["minCount"] = want_gang.get("minCount")
    if not same_controller(controller_owner(current), controller_owner(desired)) or have != want:
        raise drift("PodGroup", current)
    labels = merged_labels(current, desired)
    if labels is not None:
        updated["metadata"]["labels"] = labels
        changed = True
    wanted_refs = [
        r for r in desired["metadata"].get("ownerReferences") or [] if r.get("kind") == WORKLOAD_KIND
    ]
    refs = list(updated["metadata"].get("ownerReferences") or [])
    for want_ref in wanted_refs:
        if want_ref not in refs:
            refs = [
                r
                for r in refs
                if not (r.get("kind") == WORKLOAD_KIND and r.get("apiVersion") == want_ref["apiVersion"])
            ]
            refs.append(want_ref)
            updated["metadata"]["ownerReferences"] = refs
            changed = True
    return updated if changed else None


def pod_groups_to_delete(
    lws: MutableObj, existing: list[MutableObj], desired: set[str], in_use: set[str]
) -> list[MutableObj]:
    """LWS-controlled PodGroups that are neither desired nor named by any pod (and not already
    going: the API server keeps a deleted PodGroup behind its protection finalizer until the
    controller-manager releases it)."""
    owner = lws_owner_reference(lws)
    return [
        group
        for group in existing
        if same_controller(controller_owner(group), owner)
        and not is_deleting(group)
        and name_of(group) not in desired
        and name_of(group) not in in_use
    ]
