"""StatefulSets: as the LWS controller's caches hold them (`leader_sts`, `worker_statefulset`) and
as a test writes one (`StatefulSetBuilder`)."""

from __future__ import annotations

from typing import Any, Self

from leaderworkerset.api import constants as c
from tests.support.builders.common import NS, Obj, ObjectBuilder


def worker_statefulset_uid(leader: dict[str, Any]) -> str:
    """The UID `worker_statefulset` gives the leader's worker StatefulSet unless told otherwise."""
    return f"sts-uid-{leader['metadata']['name']}"


def as_worker_of(pod: dict[str, Any], leader: dict[str, Any]) -> dict[str, Any]:
    """`pod`, controlled by the leader's worker StatefulSet (as the StatefulSet controller makes it)."""
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": leader["metadata"]["name"],
            "uid": worker_statefulset_uid(leader),
            "controller": True,
        }
    ]
    return pod


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
            "uid": uid or worker_statefulset_uid(leader),
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
    max_unavailable: int | str | None = None,
    update_revision: str | None = None,
    generation: int | None = None,
    observed_generation: int | None = None,
) -> dict[str, Any]:
    """The leader StatefulSet as the cache holds it. `max_unavailable` is the stored
    rollingUpdate.maxUnavailable (None: the API server dropped it, feature gate
    MaxUnavailableStatefulSet off); `update_revision`, `generation` and `observed_generation`
    are what the StatefulSet controller reports (generation and observed default to 1 with an
    update revision)."""
    meta: dict[str, Any] = {"name": lws_name, "namespace": NS, "labels": {c.LABEL_SET_NAME: lws_name}}
    if replicas_annotation is not None:
        meta["annotations"] = {c.ANNOTATION_REPLICAS: replicas_annotation}
    rolling: dict[str, Any] = {"partition": partition}
    if max_unavailable is not None:
        rolling["maxUnavailable"] = max_unavailable
    status: dict[str, Any] = {"replicas": status_replicas}
    if update_revision is not None:
        status["updateRevision"] = update_revision
        generation = 1 if generation is None else generation
        status["observedGeneration"] = generation if observed_generation is None else observed_generation
    if generation is not None:
        meta["generation"] = generation
    return {
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
        },
        "status": status,
    }


class StatefulSetBuilder(ObjectBuilder):
    """`StatefulSetBuilder("lws").replicas(2).partition(1).obj()`: only the fields a test sets."""

    def __init__(self, name: str, namespace: str = NS) -> None:
        super().__init__("apps/v1", "StatefulSet", name, namespace)
        self._obj["spec"] = {}

    def replicas(self, n: int) -> Self:
        self._obj["spec"]["replicas"] = n
        return self

    def partition(self, n: int) -> Self:
        """The rolling-update partition, with no strategy type (as an apply body may leave it)."""
        self._obj["spec"]["updateStrategy"] = {"rollingUpdate": {"partition": n}}
        return self

    def service_name(self, name: str) -> Self:
        self._obj["spec"]["serviceName"] = name
        return self

    def pods(self, labels: dict[str, str], spec: Obj) -> Self:
        """The pod template, and a selector that matches exactly its labels."""
        self._obj["spec"]["selector"] = {"matchLabels": dict(labels)}
        self._obj["spec"]["template"] = {"metadata": {"labels": dict(labels)}, "spec": spec}
        return self
