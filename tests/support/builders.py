"""Fluent builders for test objects, shared by the unit, integration and e2e tests (design.md §7.5):
extend the builder, do not hand-write objects.

    lws = LeaderWorkerSetBuilder(ns).replicas(2).size(4).obj()

One LeaderWorkerSet builder with three starting points, each the shape its layer receives:

* `LeaderWorkerSetBuilder(ns)`: what a test sends to the API server. The defaults mirror upstream's
  integration-test wrapper (`BuildLeaderWorkerSet`): name `test-sample`, 2 replicas of size 2,
  RecreateGroupOnPodRestart, LeaderCreated, Shared subdomain and the rollout knobs the webhook
  would default (partition 0, maxUnavailable 1, maxSurge 0), because the controller tests run
  without webhooks.
* `cached_lws(name)`: what the controller's caches hand to `core/`: a stored object (uid,
  generation), 1 replica of size 1, workers only.
* `lws(ns)`: what the webhooks receive after defaulting: the first shape plus the v1.0 defaults of
  groupIdentity and groupReplacementPolicy.

Pods, StatefulSets and DisaggregatedSets have builders below too.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c

Obj = dict[str, Any]

IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.27"
NS = "default"
NAME = "test-sample"  # upstream's default name of a test LeaderWorkerSet
LWS_UID = "lws-uid"


def leader_pod_spec() -> Obj:
    return {"containers": [{"name": "leader", "image": IMAGE}]}


def worker_pod_spec() -> Obj:
    return {
        "containers": [
            {"name": "worker", "image": IMAGE, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
        ]
    }


class LeaderWorkerSetBuilder:
    def __init__(self, namespace: str = NS, name: str = NAME) -> None:
        self._lws: Obj = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 2,
                "leaderWorkerTemplate": {
                    "size": 2,
                    "restartPolicy": c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
                    "leaderTemplate": {"spec": leader_pod_spec()},
                    "workerTemplate": {"spec": worker_pod_spec()},
                },
                "rolloutStrategy": {
                    "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
                    "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
                },
                "startupPolicy": c.STARTUP_POLICY_LEADER_CREATED,
                "networkConfig": {"subdomainPolicy": c.SUBDOMAIN_SHARED},
            },
        }

    # ----- views (for tests that build a variant of the object by hand) --------------------------
    @property
    def spec(self) -> Obj:
        spec: Obj = self._lws["spec"]
        return spec

    @property
    def template(self) -> Obj:
        """The leaderWorkerTemplate."""
        lwt: Obj = self.spec["leaderWorkerTemplate"]
        return lwt

    @property
    def rolling(self) -> Obj:
        """The rollingUpdateConfiguration."""
        rolling: Obj = self.spec["rolloutStrategy"]["rollingUpdateConfiguration"]
        return rolling

    # ----- spec (None removes the field, to test defaulting and validation) --------------------------
    def replicas(self, n: int | None) -> Self:
        return self._set(self.spec, "replicas", n)

    def size(self, n: int | None) -> Self:
        return self._set(self.template, "size", n)

    def restart_policy(self, policy: str | None) -> Self:
        return self._set(self.template, "restartPolicy", policy)

    def startup_policy(self, policy: str) -> Self:
        self.spec["startupPolicy"] = policy
        return self

    def subdomain_policy(self, policy: str | None) -> Self:
        if policy is None:
            self.spec.pop("networkConfig", None)
        else:
            self.spec["networkConfig"] = {"subdomainPolicy": policy}
        return self

    def max_surge(self, value: int | str) -> Self:
        self.rolling["maxSurge"] = value
        return self

    def max_unavailable(self, value: int | str) -> Self:
        self.rolling["maxUnavailable"] = value
        return self

    def partition(self, value: int) -> Self:
        self.rolling["partition"] = value
        return self

    def rolling_update(self, **values: Any) -> Self:
        self.rolling.update(values)
        return self

    def subgroup(self, size: int | None, policy_type: str | None = None) -> Self:
        policy: Obj = {}
        if size is not None:
            policy["subGroupSize"] = size
        if policy_type is not None:
            policy["subGroupPolicyType"] = policy_type
        self.template["subGroupPolicy"] = policy
        return self

    def no_subgroup(self) -> Self:
        self.template.pop("subGroupPolicy", None)
        return self

    def max_group_restarts(self, budget: int) -> Self:
        self.template["maxGroupRestarts"] = budget
        return self

    def volume_claims(self, claims: list[Obj], retention: dict[str, str] | None = None) -> Self:
        self.template["volumeClaimTemplates"] = claims
        if retention is not None:
            self.template["persistentVolumeClaimRetentionPolicy"] = retention
        return self

    def spec_field(self, key: str, value: Any) -> Self:
        return self._set(self.spec, key, value)

    # ----- templates ------------------------------------------------------------------------------
    def leader_template(self, spec: Obj | None = None) -> Self:
        self.template["leaderTemplate"] = {"spec": spec or leader_pod_spec()}
        return self

    def no_leader_template(self) -> Self:
        self.template.pop("leaderTemplate", None)
        return self

    def worker_template(self, template: Obj) -> Self:
        self.template["workerTemplate"] = template
        return self

    def leader_container_name(self, name: str) -> Self:
        self.template["leaderTemplate"]["spec"]["containers"][0]["name"] = name
        return self

    def leader_resources(self, requests: dict[str, str]) -> Self:
        """Requests and limits (equal, as extended resources require) on the leader container."""
        container = self.template["leaderTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
        return self

    def worker_requests(self, requests: dict[str, str]) -> Self:
        self.template["workerTemplate"]["spec"]["containers"][0]["resources"] = {"requests": dict(requests)}
        return self

    def scheduling(self, scheduling: Obj | None) -> Self:
        """`spec.scheduling` (workload-aware gang scheduling); `{}` means one gang per replica."""
        return self._set(self.spec, "scheduling", copy.deepcopy(scheduling))

    def group_identity(self, identity: str | None) -> Self:
        return self._set(self.spec, "groupIdentity", identity)

    def worker_image(self, image: str) -> Self:
        self.template["workerTemplate"]["spec"]["containers"][0]["image"] = image
        return self

    # ----- metadata and status --------------------------------------------------------------------
    def name(self, name: str) -> Self:
        self._lws["metadata"]["name"] = name
        return self

    def uid(self, uid: str) -> Self:
        self._lws["metadata"]["uid"] = uid
        return self

    def controlled_by(self, api_version: str, kind: str, name: str, uid: str) -> Self:
        """A controller ownerReference, e.g. a parent object that delegates gang scheduling."""
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        self._lws["metadata"]["ownerReferences"] = [ref]
        return self

    def generation(self, n: int) -> Self:
        self._lws["metadata"]["generation"] = n
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._lws["metadata"].setdefault("annotations", {})[key] = value
        return self

    def annotations(self, annotations: dict[str, str]) -> Self:
        self._lws["metadata"].setdefault("annotations", {}).update(annotations)
        return self

    def label(self, key: str, value: str) -> Self:
        self._lws["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._lws["metadata"]["labels"] = dict(labels)
        return self

    def exclusive_placement(self, topology_key: str = "cloud.google.com/gke-nodepool") -> Self:
        return self.annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, topology_key)

    def status(self, status: Obj) -> Self:
        self._lws["status"] = status
        return self

    def defaulted(self) -> Self:
        """The v1.0 fields the webhook defaults on top of upstream's wrapper."""
        self.spec["groupIdentity"] = c.GROUP_IDENTITY_ORDINAL
        self.spec["groupReplacementPolicy"] = c.GROUP_REPLACEMENT_POST_TERMINATION
        self.spec["podTerminationPolicy"] = c.POD_TERMINATION_POLICY_DEFAULT
        return self

    def _set(self, target: Obj, key: str, value: Any) -> Self:
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._lws)


def cached_lws(name: str = "test-sample", namespace: str = NS) -> LeaderWorkerSetBuilder:
    """A stored LeaderWorkerSet as the caches hand it to core/: uid, generation 1, one group of one."""
    return (
        LeaderWorkerSetBuilder(namespace, name)
        .replicas(1)
        .size(1)
        .no_leader_template()
        .uid(LWS_UID)
        .generation(1)
    )


def lws(namespace: str = NS) -> LeaderWorkerSetBuilder:
    """A LeaderWorkerSet as the webhooks see it after defaulting (like upstream's BuildLeaderWorkerSet)."""
    return LeaderWorkerSetBuilder(namespace).defaulted()


# ----- pods and StatefulSets as the StatefulSet controller and our webhook shape them -----------------


def ready_conditions(ready: bool) -> list[dict[str, str]]:
    value = c.CONDITION_TRUE if ready else c.CONDITION_FALSE
    return [{"type": "Ready", "status": value}, {"type": "ContainersReady", "status": value}]


def leader_pod(
    lws_name: str,
    index: int,
    revision: str,
    *,
    ready: bool = True,
    phase: str | None = None,
    name: str | None = None,
    group_index: str | None = None,
    uid: str | None = None,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    restart_count: int = 0,
) -> dict[str, Any]:
    """A leader pod `<lws>-<index>` as the StatefulSet controller and our webhook shape it."""
    pod_name = name or f"{lws_name}-{index}"
    meta: dict[str, Any] = {
        "name": pod_name,
        "namespace": NS,
        "uid": uid or f"uid-{pod_name}",
        "labels": {
            c.LABEL_SET_NAME: lws_name,
            c.LABEL_WORKER_INDEX: "0",
            c.LABEL_GROUP_INDEX: str(index) if group_index is None else group_index,
            c.LABEL_GROUP_KEY: f"key-{pod_name}",
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        },
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": lws_name,
                "uid": "leader-sts-uid",
                "controller": True,
            }
        ],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"hostname": pod_name, "subdomain": lws_name, **leader_pod_spec()},
        "status": {
            "phase": phase or ("Running" if ready else "Pending"),
            "conditions": ready_conditions(ready),
            "containerStatuses": [{"name": "leader", "restartCount": restart_count}],
        },
    }


def worker_statefulset(
    leader: dict[str, Any], *, ready: bool = True, replicas: int = 1, uid: str | None = None
) -> dict[str, Any]:
    """The worker StatefulSet of a leader, carrying the leader's revision, owned by the leader."""
    labels = leader["metadata"]["labels"]
    name = leader["metadata"]["name"]
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid or f"sts-uid-{name}",
            "labels": {
                c.LABEL_SET_NAME: labels[c.LABEL_SET_NAME],
                c.LABEL_GROUP_INDEX: labels[c.LABEL_GROUP_INDEX],
                c.LABEL_GROUP_KEY: labels[c.LABEL_GROUP_KEY],
                c.LABEL_TEMPLATE_REVISION_HASH: labels[c.LABEL_TEMPLATE_REVISION_HASH],
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": name,
                    "uid": leader["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": replicas},
        "status": {
            "availableReplicas": replicas if ready else 0,
            "currentRevision": "r1",
            "updateRevision": "r1",
        },
    }


def leader_sts(
    lws_name: str,
    *,
    replicas: int,
    partition: int = 0,
    replicas_annotation: str | None = None,
    status_replicas: int = 0,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": lws_name, "namespace": NS, "labels": {c.LABEL_SET_NAME: lws_name}}
    if replicas_annotation is not None:
        meta["annotations"] = {c.ANNOTATION_REPLICAS: replicas_annotation}
    return {
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
        },
        "status": {"replicas": status_replicas},
    }


# ----- pods as the webhooks receive them, and DisaggregatedSets -------------------------------------


def tpu_container(name: str = "worker", env: list[Obj] | None = None) -> Obj:
    container: Obj = {"name": name, "image": "busybox", "resources": {"limits": {c.TPU_RESOURCE_NAME: "4"}}}
    if env is not None:
        container["env"] = env
    return container


def tpu_pod_spec(*containers: Obj, subdomain: str = "default") -> Obj:
    return {"containers": list(containers) or [tpu_container()], "subdomain": subdomain}


class PodBuilder:
    """A pod as the StatefulSet controller would create it from one of our templates."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {}, "annotations": {}},
            "spec": worker_pod_spec(),
        }

    def labels(self, **labels: str) -> Self:
        self._obj["metadata"]["labels"].update(labels)
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"]["labels"][key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"]["annotations"][key] = value
        return self

    def lws_name(self, name: str) -> Self:
        return self.label(c.LABEL_SET_NAME, name)

    def worker_index(self, index: str) -> Self:
        return self.label(c.LABEL_WORKER_INDEX, index)

    def group_index(self, index: str) -> Self:
        return self.label(c.LABEL_GROUP_INDEX, index)

    def size(self, size: str) -> Self:
        return self.annotation(c.ANNOTATION_SIZE, size)

    def subgroup_size(self, size: str) -> Self:
        return self.annotation(c.ANNOTATION_SUBGROUP_SIZE, size)

    def leader_requests_tpus(self) -> Self:
        return self.annotation(c.ANNOTATION_LEADER_REQUESTS_TPUS, c.ANNOTATION_TRUE)

    def spec(self, spec: Obj) -> Self:
        self._obj["spec"] = copy.deepcopy(spec)
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def revision(self, key: str) -> Self:
        return self.label(c.LABEL_TEMPLATE_REVISION_HASH, key)

    def created(self, timestamp: str) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp
        return self

    def deleting(self, timestamp: str = "2026-01-01T00:00:00Z") -> Self:
        self._obj["metadata"]["deletionTimestamp"] = timestamp
        return self

    def node(self, name: str) -> Self:
        self._obj["spec"]["nodeName"] = name
        return self

    def _status(self) -> Obj:
        status: Obj = self._obj.setdefault("status", {})
        return status

    def phase(self, phase: str, reason: str | None = None, message: str | None = None) -> Self:
        status = self._status()
        status["phase"] = phase
        if reason is not None:
            status["reason"] = reason
        if message is not None:
            status["message"] = message
        return self

    def condition(
        self, kind: str, status: str = "True", *, reason: str = "", message: str = "", at: str = ""
    ) -> Self:
        condition: Obj = {"type": kind, "status": status}
        for key, value in (("reason", reason), ("message", message), ("lastTransitionTime", at)):
            if value:
                condition[key] = value
        self._status().setdefault("conditions", []).append(condition)
        return self

    def container_status(
        self,
        name: str,
        *,
        restarts: int = 0,
        state: Obj | None = None,
        last_state: Obj | None = None,
        ready: bool = False,
    ) -> Self:
        """A kubelet container status; `state`/`last_state` like {"terminated": {"exitCode": 1}}."""
        entry: Obj = {"name": name, "ready": ready, "restartCount": restarts}
        if state is not None:
            entry["state"] = state
        if last_state is not None:
            entry["lastState"] = last_state
        self._status().setdefault("containerStatuses", []).append(entry)
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def leader(name: str = "test-sample-1", lws_name: str = "test-sample", size: str = "4") -> PodBuilder:
    return pod(name).lws_name(lws_name).worker_index("0").size(size)


def worker(name: str, group_index: str = "1", lws_name: str = "test-sample", size: str = "4") -> PodBuilder:
    return pod(name).lws_name(lws_name).group_index(group_index).size(size)


def ds_role(name: str, replicas: int | None = 2, **spec: Any) -> Obj:
    role_spec: Obj = {"leaderWorkerTemplate": {"size": 1, "workerTemplate": {"spec": worker_pod_spec()}}}
    if replicas is not None:
        role_spec["replicas"] = replicas
    role_spec.update(spec)
    return {"name": name, "spec": role_spec}


def ds(name: str = "test", *roles: Obj, **spec: Any) -> Obj:
    body: Obj = {"roles": list(roles) or [ds_role("prefill"), ds_role("decode")]}
    body.update(spec)
    return {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DS_KIND,
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


# ----- DisaggregatedSet ----------------------------------------------------------------------------
def _user_role(name: str, replicas: int | None, size: int, image: str) -> Obj:
    """A role as a user writes it: a worker template only, the CRD-level rollout defaults."""
    spec: Obj = {
        "leaderWorkerTemplate": {
            "size": size,
            "workerTemplate": {
                "metadata": {"labels": {"component": name}},
                "spec": {"containers": [{"name": "model", "image": image}]},
            },
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"name": name, "spec": spec}


class DisaggregatedSetBuilder:
    """`DisaggregatedSetBuilder(ns).role("prefill", 2).role("decode", 1).obj()`."""

    def __init__(self, namespace: str, name: str = "test-ds") -> None:
        self._ds: Obj = {
            "apiVersion": c.DS_API_VERSION,
            "kind": c.DS_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"roles": []},
        }

    def _role(self, name: str) -> Obj:
        role: Obj = next(r for r in self._ds["spec"]["roles"] if r["name"] == name)
        return role

    def role(self, name: str, replicas: int | None = 1, size: int = 1, image: str = IMAGE) -> Self:
        self._ds["spec"]["roles"].append(_user_role(name, replicas, size, image))
        return self

    def external(self, name: str) -> Self:
        self._role(name)["scaling"] = {"mode": c.ROLE_SCALING_EXTERNAL}
        return self

    def role_image(self, name: str, image: str) -> Self:
        template = self._role(name)["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        template["spec"]["containers"][0]["image"] = image
        return self

    def role_replicas(self, name: str, replicas: int) -> Self:
        self._role(name)["spec"]["replicas"] = replicas
        return self

    def role_rollout(self, name: str, max_surge: int | str, max_unavailable: int | str) -> Self:
        self._role(name)["spec"]["rolloutStrategy"] = {
            "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
            "rollingUpdateConfiguration": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
        }
        return self

    def role_metadata(self, name: str, labels: dict[str, str], annotations: dict[str, str]) -> Self:
        self._role(name)["metadata"] = {"labels": dict(labels), "annotations": dict(annotations)}
        return self

    def leader_template(self, name: str) -> Self:
        lwt = self._role(name)["spec"]["leaderWorkerTemplate"]
        lwt["leaderTemplate"] = {
            "metadata": {"labels": {"component": f"{name}-leader"}},
            "spec": {"containers": [{"name": "leader", "image": IMAGE}]},
        }
        return self

    def group_replacement_policy(self, name: str, policy: str) -> Self:
        self._role(name)["spec"]["groupReplacementPolicy"] = policy
        return self

    def slices(self, n: int) -> Self:
        self._ds["spec"]["slices"] = n
        return self

    def placement(self, policy_type: str, topology: str) -> Self:
        self._ds["spec"]["placementPolicy"] = {"type": policy_type, "topology": topology}
        return self

    def uid(self, uid: str) -> Self:
        self._ds["metadata"]["uid"] = uid
        return self

    def generation(self, generation: int) -> Self:
        self._ds["metadata"]["generation"] = generation
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._ds)
