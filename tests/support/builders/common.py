"""What every builder shares: the namespace, names and images of test objects, the pod specs and
the metadata methods (`ObjectBuilder`)."""

from __future__ import annotations

import copy
from typing import Any, Self

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


class ObjectBuilder:
    """The metadata every kind shares; a builder per kind adds its spec and status."""

    def __init__(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        metadata: Obj = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        self._obj: Obj = {"apiVersion": api_version, "kind": kind, "metadata": metadata}

    @property
    def _meta(self) -> Obj:
        meta: Obj = self._obj["metadata"]
        return meta

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def owner(self, reference: Obj) -> Self:
        """An ownerReference as given (tests of foreign or malformed owners need partial ones)."""
        self._meta.setdefault("ownerReferences", []).append(dict(reference))
        return self

    def controlled_by(self, api_version: str, kind: str, name: str, uid: str) -> Self:
        return self.owner(
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        )

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)
