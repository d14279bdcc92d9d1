"""Fluent builders for the JSON objects the webhooks receive (LeaderWorkerSets, pods, DS)."""

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c

Obj = dict[str, Any]


def worker_pod_spec() -> Obj:
    return {"containers": [{"name": "worker", "image": "nginx", "ports": [{"containerPort": 8080}]}]}


def tpu_container(name: str = "worker", env: list[Obj] | None = None) -> Obj:
    container: Obj = {"name": name, "image": "busybox", "resources": {"limits": {c.TPU_RESOURCE_NAME: "4"}}}
    if env is not None:
        container["env"] = env
    return container


def tpu_pod_spec(*containers: Obj, subdomain: str = "default") -> Obj:
    return {"containers": list(containers) or [tpu_container()], "subdomain": subdomain}


class LWSBuilder:
    """A valid, already-defaulted LeaderWorkerSet like upstream's BuildLeaderWorkerSet."""

    def __init__(self, namespace: str = "default", name: str = "test-sample") -> None:
        self._obj: Obj = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 2,
                "leaderWorkerTemplate": {
                    "size": 2,
                    "restartPolicy": c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
                    "leaderTemplate": {"spec": {"containers": [{"name": "leader", "image": "nginx"}]}},
                    "workerTemplate": {"spec": worker_pod_spec()},
                },
                "rolloutStrategy": {
                    "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
                    "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
                },
                "startupPolicy": c.STARTUP_POLICY_LEADER_CREATED,
                "networkConfig": {"subdomainPolicy": c.SUBDOMAIN_SHARED},
                "groupIdentity": c.GROUP_IDENTITY_ORDINAL,
                "groupReplacementPolicy": c.GROUP_REPLACEMENT_POST_TERMINATION,
            },
        }

    @property
    def spec(self) -> Obj:
        spec: Obj = self._obj["spec"]
        return spec

    @property
    def template(self) -> Obj:
        template: Obj = self.spec["leaderWorkerTemplate"]
        return template

    @property
    def rolling(self) -> Obj:
        config: Obj = self.spec["rolloutStrategy"]["rollingUpdateConfiguration"]
        return config

    def name(self, name: str) -> Self:
        self._obj["metadata"]["name"] = name
        return self

    def replicas(self, replicas: int | None) -> Self:
        return self._set(self.spec, "replicas", replicas)

    def size(self, size: int | None) -> Self:
        return self._set(self.template, "size", size)

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

    def rolling_update(self, **values: Any) -> Self:
        self.rolling.update(values)
        return self

    def restart_policy(self, policy: str | None) -> Self:
        return self._set(self.template, "restartPolicy", policy)

    def max_group_restarts(self, budget: int) -> Self:
        self.template["maxGroupRestarts"] = budget
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def spec_field(self, key: str, value: Any) -> Self:
        return self._set(self.spec, key, value)

    def _set(self, target: Obj, key: str, value: Any) -> Self:
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def lws(namespace: str = "default") -> LWSBuilder:
    return LWSBuilder(namespace)


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
