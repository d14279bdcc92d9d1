"""Fluent builders for test objects (design.md §7.5): extend the builder, do not hand-write objects.

    lws = LeaderWorkerSetBuilder(ns).replicas(2).size(4).obj()

The defaults mirror upstream's integration-test wrapper (`BuildLeaderWorkerSet`): name
`test-sample`, 2 replicas of size 2, RecreateGroupOnPodRestart, LeaderCreated, Shared subdomain and
the rollout knobs the webhook would default (partition 0, maxUnavailable 1, maxSurge 0), because the
controller tests run without webhooks.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c

Obj = dict[str, Any]

IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.27"


def leader_pod_spec() -> Obj:
    return {"containers": [{"name": "leader", "image": IMAGE}]}


def worker_pod_spec() -> Obj:
    return {
        "containers": [
            {"name": "worker", "image": IMAGE, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
        ]
    }


class LeaderWorkerSetBuilder:
    def __init__(self, namespace: str, name: str = "test-sample") -> None:
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

    # ----- spec ---------------------------------------------------------------------------------
    @property
    def _lwt(self) -> Obj:
        lwt: Obj = self._lws["spec"]["leaderWorkerTemplate"]
        return lwt

    @property
    def _rolling(self) -> Obj:
        rolling: Obj = self._lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
        return rolling

    def replicas(self, n: int) -> Self:
        self._lws["spec"]["replicas"] = n
        return self

    def size(self, n: int) -> Self:
        self._lwt["size"] = n
        return self

    def restart_policy(self, policy: str) -> Self:
        self._lwt["restartPolicy"] = policy
        return self

    def startup_policy(self, policy: str) -> Self:
        self._lws["spec"]["startupPolicy"] = policy
        return self

    def subdomain_policy(self, policy: str) -> Self:
        self._lws["spec"]["networkConfig"] = {"subdomainPolicy": policy}
        return self

    def max_surge(self, value: int | str) -> Self:
        self._rolling["maxSurge"] = value
        return self

    def max_unavailable(self, value: int | str) -> Self:
        self._rolling["maxUnavailable"] = value
        return self

    def partition(self, value: int) -> Self:
        self._rolling["partition"] = value
        return self

    def leader_container_name(self, name: str) -> Self:
        self._lwt["leaderTemplate"]["spec"]["containers"][0]["name"] = name
        return self

    def leader_resources(self, requests: dict[str, str]) -> Self:
        """Requests and limits (equal, as extended resources require) on the leader container."""
        container = self._lwt["leaderTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
        return self

    def worker_requests(self, requests: dict[str, str]) -> Self:
        self._lwt["workerTemplate"]["spec"]["containers"][0]["resources"] = {"requests": dict(requests)}
        return self

    def scheduling(self, scheduling: Obj) -> Self:
        """`spec.scheduling` (workload-aware gang scheduling); `{}` means one gang per replica."""
        self._lws["spec"]["scheduling"] = copy.deepcopy(scheduling)
        return self

    def no_leader_template(self) -> Self:
        self._lwt.pop("leaderTemplate", None)
        return self

    def worker_image(self, image: str) -> Self:
        self._lwt["workerTemplate"]["spec"]["containers"][0]["image"] = image
        return self

    # ----- metadata -----------------------------------------------------------------------------
    def annotation(self, key: str, value: str) -> Self:
        self._lws["metadata"].setdefault("annotations", {})[key] = value
        return self

    def label(self, key: str, value: str) -> Self:
        self._lws["metadata"].setdefault("labels", {})[key] = value
        return self

    def exclusive_placement(self, topology_key: str = "cloud.google.com/gke-nodepool") -> Self:
        return self.annotation(c.ANNOTATION_EXCLUSIVE_TOPOLOGY, topology_key)

    def obj(self) -> Obj:
        return copy.deepcopy(self._lws)


# ----- DisaggregatedSet ----------------------------------------------------------------------------
def ds_role(name: str, replicas: int | None = 1, size: int = 1, image: str = IMAGE) -> Obj:
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
        self._ds["spec"]["roles"].append(ds_role(name, replicas, size, image))
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
