"""The watch-fed caches both LeaderWorkerSet controllers read, declared once per manager.

Every kind except LeaderWorkerSets is filtered on the server by the presence of the
`leaderworkerset.sigs.k8s.io/name` label, so the caches hold only what we manage. Pods and
StatefulSets are decoded into msgspec projections; the pure `core` functions take API-shaped dicts,
so `as_dict` converts a projection when a reconcile needs one (cheap: a few fields per object).

The read-your-writes memories of what we wrote live in `memos.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import MetaLike, ObjectKey
from leaderworkerset.runtime.projections import (
    DEPLOYMENT_CODEC,
    METADATA_CODEC,
    POD_CODEC,
    STATEFULSET_CODEC,
    Deployment,
    MetadataOnly,
    Pod,
    StatefulSet,
)
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from leaderworkerset.runtime.store import label_values

# Index names (values built with `label_values(namespace, ...)`).
BY_SET = "lws-name"  # namespace, set name
BY_GROUP = "lws-group"  # namespace, set name, group index
BY_SET_LEADERS = "lws-leaders"  # namespace, set name: leader pods only


def _index_by(*label_keys: str) -> Any:
    def index(meta: MetaLike, _obj: object) -> Iterable[str]:
        labels = meta.labels or {}
        if any(key not in labels for key in label_keys):
            return ()
        return (label_values(meta.namespace or "", *(labels[key] for key in label_keys)),)

    return index


def _leaders_by_set(meta: MetaLike, _obj: object) -> Iterable[str]:
    labels = meta.labels or {}
    if c.LABEL_SET_NAME not in labels or labels.get(c.LABEL_WORKER_INDEX) != c.LEADER_WORKER_INDEX:
        return ()
    return (label_values(meta.namespace or "", labels[c.LABEL_SET_NAME]),)


_SET_INDEX = {BY_SET: _index_by(c.LABEL_SET_NAME)}
# Leaders get an index of their own: the LWS controller reads a set's leaders on every round, and
# scanning all of the set's pods for them was a cost that grew with the set (issue 14).
_GROUP_INDEXES = {
    **_SET_INDEX,
    BY_GROUP: _index_by(c.LABEL_SET_NAME, c.LABEL_GROUP_INDEX),
    BY_SET_LEADERS: _leaders_by_set,
}


def as_dict(obj: msgspec.Struct | Mapping[str, Any]) -> MutableObj:
    """The API-shaped dict of a cached object (projections are converted, dicts copied shallowly)."""
    if isinstance(obj, Mapping):
        return dict(obj)
    result: MutableObj = msgspec.to_builtins(obj)
    return result


def _metadata_view(obj: Pod) -> MutableObj:
    """A pod's identity, labels, annotations and finalizers as an API-shaped dict: enough for a
    metadata rule (leader? held by the budget? waiting for its in-place update to settle?) without
    converting the whole projection. Converting every pod of a set per reconcile was the largest
    CPU cost of a 100-group create (issue 14)."""
    meta = obj.metadata
    return {
        "metadata": {
            "name": meta.name,
            "namespace": meta.namespace,
            "labels": meta.labels or {},
            "annotations": meta.annotations or {},
            "finalizers": meta.finalizers or [],
        }
    }


@dataclass
class SharedInformers:
    lws: Informer[MutableObj]
    statefulsets: Informer[StatefulSet]
    pods: Informer[Pod]
    services: Informer[MetadataOnly]
    revisions: Informer[MutableObj]
    # Hash identity: the leader Deployments (labelled with the set name, like every child).
    deployments: Informer[Deployment]

    # ----- reads, each namespaced ------------------------------------------------------------------
    def set_pods(self, namespace: str, lws_name: str) -> list[MutableObj]:
        return [as_dict(p) for p in self.pods.store.by_index(BY_SET, label_values(namespace, lws_name))]

    def set_pods_where(
        self, namespace: str, lws_name: str, rule: Callable[[MutableObj], bool]
    ) -> list[MutableObj]:
        """The set's pods that pass a rule reading only metadata (see `_metadata_view`)."""
        pods = self.pods.store.by_index(BY_SET, label_values(namespace, lws_name))
        return [as_dict(p) for p in pods if rule(_metadata_view(p))]

    def set_leader_pods(self, namespace: str, lws_name: str) -> list[MutableObj]:
        leaders = self.pods.store.by_index(BY_SET_LEADERS, label_values(namespace, lws_name))
        return [as_dict(p) for p in leaders]

    def gated_leader_keys(self, namespace: str, lws_name: str) -> list[ObjectKey]:
        """The set's leaders still behind the group-replacement gate, read from the projections
        (no conversion: this runs on every pod deletion of the set)."""
        leaders = self.pods.store.by_index(BY_SET_LEADERS, label_values(namespace, lws_name))
        return [
            ObjectKey(p.metadata.namespace or "", p.metadata.name or "")
            for p in leaders
            if any(gate.name == c.SCHEDULING_GATE_GROUP_REPLACEMENT for gate in p.spec.schedulingGates or ())
        ]

    def group_pods(self, namespace: str, lws_name: str, group_index: str) -> list[MutableObj]:
        value = label_values(namespace, lws_name, group_index)
        return [as_dict(p) for p in self.pods.store.by_index(BY_GROUP, value)]

    def set_statefulsets(self, namespace: str, lws_name: str) -> list[MutableObj]:
        value = label_values(namespace, lws_name)
        return [as_dict(s) for s in self.statefulsets.store.by_index(BY_SET, value)]

    def statefulset(self, namespace: str, name: str) -> MutableObj | None:
        sts = self.statefulsets.store.get(ObjectKey(namespace, name))
        return None if sts is None else as_dict(sts)

    def deployment(self, namespace: str, name: str) -> MutableObj | None:
        deploy = self.deployments.store.get(ObjectKey(namespace, name))
        return None if deploy is None else as_dict(deploy)

    def pod(self, namespace: str, name: str) -> MutableObj | None:
        pod = self.pods.store.get(ObjectKey(namespace, name))
        return None if pod is None else as_dict(pod)

    def has_service(self, namespace: str, name: str) -> bool:
        return ObjectKey(namespace, name) in self.services.store

    def set_revisions(self, namespace: str, lws_name: str) -> list[MutableObj]:
        value = label_values(namespace, lws_name)
        return list(self.revisions.store.by_index(BY_SET, value))


def shared_informers(cache: Cache, namespace: str | None = None) -> SharedInformers:
    """Declare the informers on the manager's cache (call once per manager).

    With `namespace`, every watch is scoped to it on the server, so the manager needs (and reads)
    nothing outside that namespace.
    """
    selector = c.LABEL_SET_NAME
    return SharedInformers(
        lws=cache.informer(LEADERWORKERSETS, DictCodec(), namespace=namespace),
        statefulsets=cache.informer(
            STATEFULSETS, STATEFULSET_CODEC, namespace=namespace, label_selector=selector, indexers=_SET_INDEX
        ),
        pods=cache.informer(
            PODS, POD_CODEC, namespace=namespace, label_selector=selector, indexers=_GROUP_INDEXES
        ),
        services=cache.informer(SERVICES, METADATA_CODEC, namespace=namespace, label_selector=selector),
        revisions=cache.informer(
            CONTROLLER_REVISIONS,
            DictCodec(),
            namespace=namespace,
            label_selector=selector,
            indexers=_SET_INDEX,
        ),
        deployments=cache.informer(
            DEPLOYMENTS, DEPLOYMENT_CODEC, namespace=namespace, label_selector=selector
        ),
    )
