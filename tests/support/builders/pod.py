"""Pods: as the StatefulSet controller and our webhook shape them (`leader_pod`), and as the
webhooks receive them (`PodBuilder`, `leader`, `worker`)."""

from __future__ import annotations

import copy
from typing import Any, Self

from leaderworkerset.api import constants as c
from tests.support.builders.common import NS, Obj, leader_pod_spec, worker_pod_spec


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
    sts_revision: str | None = None,
) -> dict[str, Any]:
    """A leader pod `<lws>-<index>` as the StatefulSet controller and our webhook shape it;
    `sts_revision` is its StatefulSet revision (the `controller-revision-hash` label)."""
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
    if sts_revision is not None:
        meta["labels"][c.LABEL_CONTROLLER_REVISION_HASH] = sts_revision
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
