"""The LeaderWorkerSet builder, with three starting points, each the shape its layer receives:

    lws = LeaderWorkerSetBuilder(ns).replicas(2).size(4).obj()

* `LeaderWorkerSetBuilder(ns)`: what a test sends to the API server. The defaults mirror upstream's
  integration-test wrapper (`BuildLeaderWorkerSet`): name `test-sample`, 2 replicas of size 2,
  RecreateGroupOnPodRestart, LeaderCreated, Shared subdomain and the rollout knobs the webhook
  would default (partition 0, maxUnavailable 1, maxSurge 0), because the controller tests run
  without webhooks.
* `cached_lws(name)`: what the controller's caches hand to `core/`: a stored object (uid,
  generation), 1 replica of size 1, workers only.
* `lws(ns)`: what the webhooks receive after defaulting: the first shape plus the v1.0 defaults of
  groupIdentity and groupReplacementPolicy.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c
from tests.support.builders.common import LWS_UID, NAME, NS, Obj, leader_pod_spec, worker_pod_spec


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

    def restart_backoff(self, base: int | None = None, cap: int | None = None) -> Self:
        """`leaderWorkerTemplate.restartBackoff` with the members given (both None: ``{}``)."""
        field = {
            key: value for key, value in (("baseSeconds", base), ("capSeconds", cap)) if value is not None
        }
        self.template["restartBackoff"] = field
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

    def _pod_specs(self) -> list[Obj]:
        templates = (self.template.get("leaderTemplate"), self.template["workerTemplate"])
        return [t["spec"] for t in templates if t is not None]

    def node_selector(self, selector: dict[str, str]) -> Self:
        """The same nodeSelector on the leader and worker templates."""
        for spec in self._pod_specs():
            spec["nodeSelector"] = dict(selector)
        return self

    def prefer_node(self, node: str) -> Self:
        """Every pod prefers `node` (the scheduler keeps sending groups back to it). The templates get
        a spread constraint of their own that matches no pod, which switches off the scheduler's
        default spreading: it would otherwise pull a set's pods away from the node they crowd."""
        preferred = {
            "weight": 100,
            "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]},
        }
        neutral = {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"test.leaderworkerset.dev/no-such-pod": "true"}},
        }
        for spec in self._pod_specs():
            spec["affinity"] = {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}
            }
            spec["topologySpreadConstraints"] = [neutral]
        return self

    def leader_container_name(self, name: str) -> Self:
        self.template["leaderTemplate"]["spec"]["containers"][0]["name"] = name
        return self

    def leader_resources(self, requests: dict[str, str]) -> Self:
        """Requests and limits (equal, as extended resources require) on the leader container."""
        container = self.template["leaderTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
        return self

    def worker_resources(self, requests: dict[str, str]) -> Self:
        """Requests and limits (equal: a real pod's extended resources need limits) on the worker."""
        container = self.template["workerTemplate"]["spec"]["containers"][0]
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
