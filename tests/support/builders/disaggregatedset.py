"""DisaggregatedSets: as the webhooks receive them (`ds`, `ds_role`) and as a user writes them
(`DisaggregatedSetBuilder`)."""

from __future__ import annotations

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c
from tests.support.builders.common import IMAGE, Obj, worker_pod_spec


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


DS_NAME = "test-ds"  # the default name of a test DisaggregatedSet


class DisaggregatedSetBuilder:
    """`DisaggregatedSetBuilder(ns).role("prefill", 2).role("decode", 1).obj()`."""

    def __init__(self, namespace: str, name: str = DS_NAME) -> None:
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

    def role_pod_spec(self, name: str, spec: Obj) -> Self:
        """The whole pod spec of a role's worker template (e.g. the real nodes' probe workload)."""
        self._role(name)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"] = spec
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
