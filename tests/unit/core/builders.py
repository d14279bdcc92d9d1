"""Fluent builders of API-server-shaped dicts for the pure core tests.

Kept local to tests/unit/core until the shared builders in tests/support exist; they only produce
plain dicts, the shape the controller's caches hand to core/.
"""

import copy
from dataclasses import dataclass, field
from typing import Any, Self

from leaderworkerset.api import constants as c

NS = "default"
LWS_UID = "lws-uid"


def worker_pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "worker",
                "image": "docker.io/nginxinc/nginx-unprivileged:1.27",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {},
            }
        ]
    }


def leader_pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {"name": "leader", "image": "docker.io/nginxinc/nginx-unprivileged:1.27", "resources": {}}
        ]
    }


class LWSBuilder:
    """`LWSBuilder("test-sample").replicas(4).size(2).max_surge(1).obj()`."""

    def __init__(self, name: str = "test-sample", namespace: str = NS) -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "metadata": {"name": name, "namespace": namespace, "uid": LWS_UID, "generation": 1},
            "spec": {
                "replicas": 1,
                "leaderWorkerTemplate": {
                    "size": 1,
                    "restartPolicy": c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
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

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]
        return spec

    @property
    def _lwt(self) -> dict[str, Any]:
        lwt: dict[str, Any] = self._spec["leaderWorkerTemplate"]
        return lwt

    @property
    def _rolling(self) -> dict[str, Any]:
        rolling: dict[str, Any] = self._spec["rolloutStrategy"]["rollingUpdateConfiguration"]
        return rolling

    def replicas(self, n: int) -> Self:
        self._spec["replicas"] = n
        return self

    def size(self, n: int) -> Self:
        self._lwt["size"] = n
        return self

    def generation(self, n: int) -> Self:
        self._obj["metadata"]["generation"] = n
        return self

    def max_surge(self, v: int | str) -> Self:
        self._rolling["maxSurge"] = v
        return self

    def max_unavailable(self, v: int | str) -> Self:
        self._rolling["maxUnavailable"] = v
        return self

    def partition(self, n: int) -> Self:
        self._rolling["partition"] = n
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._obj["metadata"]["labels"] = dict(labels)
        return self

    def annotations(self, annotations: dict[str, str]) -> Self:
        self._obj["metadata"].setdefault("annotations", {}).update(annotations)
        return self

    def leader_template(self, spec: dict[str, Any] | None = None) -> Self:
        self._lwt["leaderTemplate"] = {"spec": spec or leader_pod_spec()}
        return self

    def worker_template(self, template: dict[str, Any]) -> Self:
        self._lwt["workerTemplate"] = template
        return self

    def restart_policy(self, policy: str) -> Self:
        self._lwt["restartPolicy"] = policy
        return self

    def scheduling(self, scheduling: dict[str, Any] | None) -> Self:
        self._spec["scheduling"] = copy.deepcopy(scheduling)
        return self

    def group_identity(self, identity: str) -> Self:
        self._spec["groupIdentity"] = identity
        return self

    def startup_policy(self, policy: str) -> Self:
        self._spec["startupPolicy"] = policy
        return self

    def subdomain_policy(self, policy: str | None) -> Self:
        if policy is None:
            self._spec.pop("networkConfig", None)
        else:
            self._spec["networkConfig"] = {"subdomainPolicy": policy}
        return self

    def subgroup(self, size: int, policy_type: str | None = None) -> Self:
        sgp: dict[str, Any] = {"subGroupSize": size}
        if policy_type is not None:
            sgp["subGroupPolicyType"] = policy_type
        self._lwt["subGroupPolicy"] = sgp
        return self

    def volume_claims(self, claims: list[dict[str, Any]], retention: dict[str, str] | None = None) -> Self:
        self._lwt["volumeClaimTemplates"] = claims
        if retention is not None:
            self._lwt["persistentVolumeClaimRetentionPolicy"] = retention
        return self

    def status(self, status: dict[str, Any]) -> Self:
        self._obj["status"] = status
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


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


@dataclass
class Group:
    """One simulated group: its leader's revision and readiness."""

    revision: str
    ready: bool = False


@dataclass
class World:
    """A tiny cluster for rollout simulations: the leader StatefulSet and its groups by ordinal."""

    lws_name: str
    size: int
    sts_replicas: int
    partition: int = 0
    replicas_annotation: int = 0
    update_revision: str = ""
    current_revision: str = ""
    groups: dict[int, Group] = field(default_factory=dict)

    def leader_pods(self) -> list[dict[str, Any]]:
        return [
            leader_pod(self.lws_name, i, g.revision, ready=g.ready) for i, g in sorted(self.groups.items())
        ]

    def statefulsets(self) -> list[dict[str, Any]]:
        if self.size == 1:
            return [leader_sts(self.lws_name, replicas=self.sts_replicas)]
        return [
            worker_statefulset(p, ready=g.ready)
            for p, g in zip(self.leader_pods(), self.groups.values(), strict=True)
        ]

    def sts_obj(self) -> dict[str, Any]:
        return leader_sts(
            self.lws_name,
            replicas=self.sts_replicas,
            partition=self.partition,
            replicas_annotation=str(self.replicas_annotation),
            status_replicas=len(self.groups),
        )

    def statefulset_controller(self) -> None:
        """Play the StatefulSet controller (Parallel, with a big enough maxUnavailable): drop ordinals
        above replicas, create missing ones, recreate outdated ones at or above the partition."""
        for ordinal in [o for o in self.groups if o >= self.sts_replicas]:
            del self.groups[ordinal]
        for ordinal in range(self.sts_replicas):
            wanted = self.update_revision if ordinal >= self.partition else self.current_revision
            group = self.groups.get(ordinal)
            if group is None or (ordinal >= self.partition and group.revision != self.update_revision):
                self.groups[ordinal] = Group(wanted, ready=False)
        if self.partition == 0 and all(g.revision == self.update_revision for g in self.groups.values()):
            self.current_revision = self.update_revision

    def mark_ready(self, *ordinals: int) -> None:
        for ordinal in ordinals:
            self.groups[ordinal].ready = True

    def row(self) -> str:
        """The doc's notation: ✅ updated+ready, ❎ not updated, ⏳ in update (new, not ready)."""
        cells = []
        for ordinal in range(max([*self.groups, -1]) + 1):
            group = self.groups.get(ordinal)
            if group is None:
                cells.append("  ")
            elif group.revision != self.update_revision:
                cells.append("❎")
            else:
                cells.append("✅" if group.ready else "⏳")
        return " ".join(cells).rstrip()
