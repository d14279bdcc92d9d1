"""Desired StatefulSets of an Ordinal LeaderWorkerSet.

* The leader StatefulSet `<lws>` is applied on every reconcile with server-side apply (field manager
  `lws`, force), so the dict returned here lists exactly the fields the controller owns.
* A worker StatefulSet per leader pod is created once and never updated: a group changes only by
  being recreated. It is built from the *leader's* revision (the templates that were current when
  that leader was created), with metadata taken from the live LWS.

In every metadata merge the controller's keys override the user's, and the user's other keys are
kept (upstream's mergeMetadata and apply-configuration WithLabels/WithAnnotations behave that way).
"""

import copy
from collections.abc import Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.tpu import pod_requests_tpus
from leaderworkerset.core.groups import naming
from leaderworkerset.core.lifecycle.termination import leader_template_termination_annotations
from leaderworkerset.core.objects import (
    Obj,
    annotations_of,
    labels_of,
    lws_owner_reference,
    lws_replicas,
    name_of,
    namespace_of,
    pod_owner_reference,
    revision_key_of,
    spec_size,
)
from leaderworkerset.core.rollout.partition import RolloutBudget, rollout_budget

_APPS_V1 = "apps/v1"
_CORE_V1 = "v1"
_STATEFULSET_KIND = "StatefulSet"
_PARALLEL = "Parallel"
_WORKER_ORDINALS_START = 1


class WorkerStatefulSetError(ValueError):
    """The leader pod lacks what its worker StatefulSet is derived from (a reconcile error)."""


def merge_metadata(user: Mapping[str, str] | None, controller: Mapping[str, str]) -> dict[str, str]:
    """User keys first, controller keys win on clashes."""
    return {**(user or {}), **controller}


def _template_spec(spec: Obj) -> Obj:
    lwt: Obj = spec.get("leaderWorkerTemplate") or {}
    return lwt


def subdomain_policy(spec: Obj) -> str:
    """The spec's subdomainPolicy; an absent networkConfig means Shared."""
    policy = (spec.get("networkConfig") or {}).get("subdomainPolicy")
    return str(policy) if policy else c.SUBDOMAIN_SHARED


def _with_template_metadata(
    template: Obj, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> dict[str, Any]:
    """Deep copy of a pod template with controller labels/annotations merged into its metadata."""
    result: dict[str, Any] = copy.deepcopy(dict(template))
    meta = dict(result.get("metadata") or {})
    meta["labels"] = merge_metadata(meta.get("labels"), labels)
    if annotations or meta.get("annotations"):
        meta["annotations"] = merge_metadata(meta.get("annotations"), annotations)
    result["metadata"] = meta
    return result


def pvc_templates(spec: Obj, namespace: str) -> list[dict[str, Any]]:
    """volumeClaimTemplates as upstream carries them: name, accessModes, storageClassName,
    volumeMode and resources only (labels, annotations, selectors and the rest are dropped)."""
    result = []
    for pvc in _template_spec(spec).get("volumeClaimTemplates") or []:
        pvc_spec = pvc.get("spec") or {}
        out_spec: dict[str, Any] = {}
        if pvc_spec.get("accessModes"):
            out_spec["accessModes"] = list(pvc_spec["accessModes"])
        for field in ("storageClassName", "volumeMode"):
            if pvc_spec.get(field) is not None:
                out_spec[field] = pvc_spec[field]
        resources = pvc_spec.get("resources") or {}
        kept = {
            k: copy.deepcopy(resources[k]) for k in ("requests", "limits") if resources.get(k) is not None
        }
        if kept:
            out_spec["resources"] = kept
        result.append(
            {
                "apiVersion": _CORE_V1,
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name_of(pvc), "namespace": namespace},
                "spec": out_spec,
            }
        )
    return result


def _storage_fields(spec: Obj, namespace: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    claims = pvc_templates(spec, namespace)
    if claims:
        fields["volumeClaimTemplates"] = claims
    policy = _template_spec(spec).get("persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        # Both fields are always sent, as upstream dereferences both.
        fields["persistentVolumeClaimRetentionPolicy"] = {
            "whenDeleted": policy.get("whenDeleted", ""),
            "whenScaled": policy.get("whenScaled", ""),
        }
    return fields


# --- leader ----------------------------------------------------------------------------------------


def leader_template_annotations(lws: Obj) -> dict[str, str]:
    """Annotations the controller adds to the leader pod template (from the live spec)."""
    spec: Obj = lws.get("spec") or {}
    user = annotations_of(lws)
    annotations = {c.ANNOTATION_SIZE: str(spec_size(spec))}
    if user.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY):
        annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY] = user[c.ANNOTATION_EXCLUSIVE_TOPOLOGY]
    subgroup = _template_spec(spec).get("subGroupPolicy")
    if subgroup is not None:
        annotations[c.ANNOTATION_SUBGROUP_POLICY_TYPE] = str(
            subgroup.get("subGroupPolicyType") or c.SUBGROUP_POLICY_LEADER_WORKER
        )
        annotations[c.ANNOTATION_SUBGROUP_SIZE] = str(subgroup.get("subGroupSize"))
        if user.get(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY):
            annotations[c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY] = user[
                c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY
            ]
    if (spec.get("networkConfig") or {}).get("subdomainPolicy") == c.SUBDOMAIN_UNIQUE_PER_REPLICA:
        annotations[c.ANNOTATION_SUBDOMAIN_POLICY] = c.SUBDOMAIN_UNIQUE_PER_REPLICA
    annotations.update(leader_template_termination_annotations(lws))
    return annotations


def leader_selector(lws_name: str) -> dict[str, str]:
    return {c.LABEL_SET_NAME: lws_name, c.LABEL_WORKER_INDEX: c.LEADER_WORKER_INDEX}


def leader_statefulset(
    lws: Obj,
    *,
    partition: int,
    replicas: int,
    revision_key: str,
    budget: RolloutBudget | None = None,
    extra_template_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The server-side-apply body of the leader StatefulSet `<lws>`.

    `extra_template_annotations` is the hook for features layered on top (workload-aware
    scheduling annotations); they are merged after the controller's own.
    """
    meta = lws.get("metadata") or {}
    spec: Obj = lws.get("spec") or {}
    lws_name, namespace = name_of(lws), namespace_of(lws)
    budget = budget or rollout_budget(lws)
    lwt = _template_spec(spec)
    # A present leaderTemplate wins even when empty, as upstream tests the pointer, not the content.
    leader_template = lwt.get("leaderTemplate")
    template = leader_template if leader_template is not None else lwt.get("workerTemplate") or {}
    template_labels = {**leader_selector(lws_name), c.LABEL_TEMPLATE_REVISION_HASH: revision_key}
    template_annotations = {**leader_template_annotations(lws), **(extra_template_annotations or {})}
    strategy_type = (spec.get("rolloutStrategy") or {}).get("type") or c.ROLLOUT_STRATEGY_ROLLING_UPDATE
    sts_spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": leader_selector(lws_name)},
        "template": _with_template_metadata(template, template_labels, template_annotations),
        "serviceName": lws_name,
        "podManagementPolicy": _PARALLEL,
        "updateStrategy": {
            "type": strategy_type,
            "rollingUpdate": {"partition": partition, "maxUnavailable": budget.statefulset_max_unavailable},
        },
        **_storage_fields(spec, namespace),
    }
    return {
        "apiVersion": _APPS_V1,
        "kind": _STATEFULSET_KIND,
        "metadata": {
            "name": lws_name,
            "namespace": namespace,
            "labels": merge_metadata(
                meta.get("labels"), {c.LABEL_SET_NAME: lws_name, c.LABEL_TEMPLATE_REVISION_HASH: revision_key}
            ),
            "annotations": merge_metadata(
                meta.get("annotations"), {c.ANNOTATION_REPLICAS: str(lws_replicas(lws))}
            ),
            "ownerReferences": [lws_owner_reference(lws)],
        },
        "spec": sts_spec,
    }


# --- workers ---------------------------------------------------------------------------------------


def worker_selector(lws_name: str, leader_pod: Obj) -> dict[str, str]:
    leader_labels = labels_of(leader_pod)
    return {
        c.LABEL_GROUP_INDEX: leader_labels.get(c.LABEL_GROUP_INDEX, ""),
        c.LABEL_SET_NAME: lws_name,
        c.LABEL_GROUP_KEY: leader_labels.get(c.LABEL_GROUP_KEY, ""),
    }


def _leader_address_of(leader_pod: Obj) -> str:
    """The leader's DNS name from its own spec, stamped on the worker template."""
    pod_spec = leader_pod.get("spec") or {}
    return naming.leader_address(
        str(pod_spec.get("hostname", "")), str(pod_spec.get("subdomain", "")), namespace_of(leader_pod)
    )


def worker_template_annotations(
    lws: Obj, revision_spec: Obj, leader_pod: Obj, *, leader_requests_tpus: bool
) -> dict[str, str]:
    """Annotations on the worker pod template. Shape (size, subgroups) comes from the leader's
    revision so an old group rebuilt mid-rollout stays coherent; topology keys from the live LWS."""
    user = annotations_of(lws)
    annotations = {
        c.ANNOTATION_SIZE: str(spec_size(revision_spec)),
        c.ANNOTATION_LEADER_NAME: name_of(leader_pod),
    }
    if user.get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY):
        annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY] = user[c.ANNOTATION_EXCLUSIVE_TOPOLOGY]
    subgroup = _template_spec(revision_spec).get("subGroupPolicy")
    if subgroup is not None:
        if subgroup.get("subGroupPolicyType"):
            annotations[c.ANNOTATION_SUBGROUP_POLICY_TYPE] = str(subgroup["subGroupPolicyType"])
        annotations[c.ANNOTATION_SUBGROUP_SIZE] = str(subgroup.get("subGroupSize"))
        if user.get(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY):
            annotations[c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY] = user[
                c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY
            ]
    if leader_requests_tpus:
        annotations[c.ANNOTATION_LEADER_REQUESTS_TPUS] = c.ANNOTATION_TRUE
    annotations[c.ANNOTATION_LEADER_ADDRESS] = _leader_address_of(leader_pod)
    return annotations


def worker_service_name(lws: Obj, revision_spec: Obj, leader_pod: Obj) -> str:
    """v1.0: the leader's subdomain. Before the subdomain is known, the snapshot rule (the LWS name
    for Shared, the leader pod name for UniquePerReplica, decided by the leader's revision)."""
    subdomain = (leader_pod.get("spec") or {}).get("subdomain")
    if subdomain:
        return str(subdomain)
    if subdomain_policy(revision_spec) == c.SUBDOMAIN_SHARED:
        return name_of(lws)
    return name_of(leader_pod)


def require_leader_dns(leader_pod: Obj) -> None:
    """v1.0 refuses to build workers before the leader has a hostname and subdomain."""
    pod_spec = leader_pod.get("spec") or {}
    if not pod_spec.get("hostname") or not pod_spec.get("subdomain"):
        raise WorkerStatefulSetError(
            f"leader pod {namespace_of(leader_pod)}/{name_of(leader_pod)} has no hostname or subdomain"
        )


def worker_statefulset(
    lws: Obj,
    leader_pod: Obj,
    revision_spec: Obj,
    *,
    leader_requests_tpus: bool | None = None,
    node_selector: Mapping[str, str] | None = None,
    extra_template_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The worker StatefulSet of one group, to be created (never updated) by the pod controller.

    `revision_spec` is the LWS `spec` with the leader's ControllerRevision applied (it supplies the
    worker template, size, subgroup policy, network config and volume claims). `node_selector`
    carries the exclusive-topology pin `{key: value}` once the leader is scheduled.
    `extra_template_annotations` is where layered features (Hash identity, workload-aware
    scheduling) add their template annotations. `leader_requests_tpus` defaults to asking the
    leader pod's spec.
    """
    if leader_requests_tpus is None:
        leader_requests_tpus = pod_requests_tpus(dict(leader_pod.get("spec") or {}))
    lws_name, namespace = name_of(lws), namespace_of(leader_pod) or namespace_of(lws)
    meta = lws.get("metadata") or {}
    selector = worker_selector(lws_name, leader_pod)
    labels = {**selector, c.LABEL_TEMPLATE_REVISION_HASH: revision_key_of(leader_pod)}
    annotations = {
        **worker_template_annotations(
            lws, revision_spec, leader_pod, leader_requests_tpus=leader_requests_tpus
        ),
        **(extra_template_annotations or {}),
    }
    template = _with_template_metadata(
        _template_spec(revision_spec).get("workerTemplate") or {}, labels, annotations
    )
    if node_selector:
        pod_spec = dict(template.get("spec") or {})
        pod_spec["nodeSelector"] = merge_metadata(pod_spec.get("nodeSelector"), node_selector)
        template["spec"] = pod_spec
    sts_meta: dict[str, Any] = {
        "name": name_of(leader_pod),
        "namespace": namespace,
        "labels": {**merge_metadata(meta.get("labels"), labels), c.LABEL_ROLE: c.ROLE_WORKER},
        "ownerReferences": [pod_owner_reference(leader_pod)],
    }
    if meta.get("annotations"):
        sts_meta["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": _APPS_V1,
        "kind": _STATEFULSET_KIND,
        "metadata": sts_meta,
        "spec": {
            "replicas": spec_size(revision_spec) - 1,
            "selector": {"matchLabels": selector},
            "template": template,
            "serviceName": worker_service_name(lws, revision_spec, leader_pod),
            "podManagementPolicy": _PARALLEL,
            "ordinals": {"start": _WORKER_ORDINALS_START},
            **_storage_fields(revision_spec, namespace),
        },
    }
