"""The watch-fed caches both LeaderWorkerSet controllers read, declared once per manager.

Every kind except LeaderWorkerSets is filtered on the server by the presence of the
`leaderworkerset.sigs.k8s.io/name` label, so the caches hold only what we manage. Pods and
StatefulSets are decoded into msgspec projections; the pure `core` functions take API-shaped dicts,
so `as_dict` converts a projection when a reconcile needs one (a few fields per object).

A set's rounds read every leader pod and StatefulSet of the set, so those are converted once per
version of the object and the dict is shared by every later read until the object changes
(`_Views`): converting 2,500 leaders and 2,500 StatefulSets on each of 833 rounds was over a quarter
of the CPU of a 2,500-group create (docs/benchmarks.md). Callers never change what a read returns
(the core builds new objects); `LWS_CHECK_SHARED_VIEWS=1`, set by the test suite, compares
every shared dict with a fresh conversion on each reuse and fails loudly if one was changed.

The read-your-writes memories of what we wrote live in `memos.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.lifecycle.restartbudget import holds_budget_finalizer
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import MetaLike, ObjectKey, key_of
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
from leaderworkerset.runtime.reflector import FuncHandler, Informer
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
BY_SET_GATED_LEADERS = "lws-gated-leaders"  # namespace, set name: leaders behind the replacement gate
BY_SET_HELD = "lws-held"  # namespace, set name: pods a spent restart budget holds (its finalizer)

# The StatefulSet controller labels the ControllerRevisions it makes for a StatefulSet with this (and
# with the pod template's labels, our set name among them); a set's own revisions never carry it.
_STATEFULSET_HISTORY_LABEL = "controller.kubernetes.io/hash"
_CHECK_SHARED_VIEWS = "LWS_CHECK_SHARED_VIEWS"

S = TypeVar("S", bound=msgspec.Struct)


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


def behind_replacement_gate(pod: Pod) -> bool:
    """The cached pod still carries the group-replacement scheduling gate (read from the projection)."""
    return any(gate.name == c.SCHEDULING_GATE_GROUP_REPLACEMENT for gate in pod.spec.schedulingGates or ())


def _gated_leaders_by_set(meta: MetaLike, obj: Pod) -> Iterable[str]:
    return _leaders_by_set(meta, obj) if behind_replacement_gate(obj) else ()


_by_set = _index_by(c.LABEL_SET_NAME)


def _held_by_set(meta: MetaLike, obj: Pod) -> Iterable[str]:
    return _by_set(meta, obj) if holds_budget_finalizer(_metadata_view(obj)) else ()


_SET_INDEX = {BY_SET: _by_set}
# Leaders get an index of their own: the LWS controller reads a set's leaders on every round, and
# scanning all of the set's pods for them was a cost that grew with the set. The gated
# leaders and the held pods are looked up on every pod deletion and on every event of a set or its
# leader StatefulSet: scanning the set for them cost 2,500 leaders per deletion and 10,000 pods per
# set event in a 2,500-group set.
_GROUP_INDEXES = {
    **_SET_INDEX,
    BY_GROUP: _index_by(c.LABEL_SET_NAME, c.LABEL_GROUP_INDEX),
    BY_SET_LEADERS: _leaders_by_set,
    BY_SET_GATED_LEADERS: _gated_leaders_by_set,
    BY_SET_HELD: _held_by_set,
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
    CPU cost of a 100-group create."""
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


class SharedViewChangedError(AssertionError):
    """A caller changed a dict that `_Views` shares between reads (only raised under the check)."""


# Under the check: every shared view found changed, for the test suite to assert on (a reconcile
# that raises is retried and logged, which a test may not notice by itself).
CHANGED_VIEWS: list[str] = []


class _Views(Generic[S]):
    """The API-shaped dicts of an informer's projections, each converted once per version of its
    object and shared until that object is replaced or deleted. An entry keeps the projection it
    was made from, so an identity check tells a current view from a stale one."""

    def __init__(self, informer: Informer[S]) -> None:
        self._meta = informer.store.codec.meta
        self._views: dict[ObjectKey, tuple[S, MutableObj]] = {}
        self._check = os.environ.get(_CHECK_SHARED_VIEWS) == "1"
        informer.add_handler(FuncHandler(delete=self._forget))

    def of(self, obj: S) -> MutableObj:
        key = key_of(self._meta(obj))
        entry = self._views.get(key)
        if entry is not None and entry[0] is obj:
            if self._check and entry[1] != msgspec.to_builtins(obj):
                CHANGED_VIEWS.append(f"{key.namespace}/{key.name}")
                raise SharedViewChangedError(f"a reader changed the shared view of {key}")
            return entry[1]
        view: MutableObj = msgspec.to_builtins(obj)
        self._views[key] = (obj, view)
        return view

    def __len__(self) -> int:
        return len(self._views)

    def _forget(self, obj: S) -> None:
        self._views.pop(key_of(self._meta(obj)), None)


@dataclass
class SharedInformers:
    lws: Informer[MutableObj]
    statefulsets: Informer[StatefulSet]
    pods: Informer[Pod]
    services: Informer[MetadataOnly]
    revisions: Informer[MutableObj]
    # Hash identity: the leader Deployments (labelled with the set name, like every child).
    deployments: Informer[Deployment]
    # Shared dicts of what every round of a set reads whole: its leaders and StatefulSets. Workers
    # are converted per read (a reconcile reads a group's at most), keeping the cache's memory.
    _leader_views: _Views[Pod] = field(init=False, repr=False)
    _statefulset_views: _Views[StatefulSet] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._leader_views = _Views(self.pods)
        self._statefulset_views = _Views(self.statefulsets)

    def _pod_dict(self, pod: Pod) -> MutableObj:
        if (pod.metadata.labels or {}).get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX:
            return self._leader_views.of(pod)
        return as_dict(pod)

    # ----- reads, each namespaced ------------------------------------------------------------------
    def set_pods(self, namespace: str, lws_name: str) -> list[MutableObj]:
        return [
            self._pod_dict(p) for p in self.pods.store.by_index(BY_SET, label_values(namespace, lws_name))
        ]

    def set_pods_where(
        self, namespace: str, lws_name: str, rule: Callable[[MutableObj], bool]
    ) -> list[MutableObj]:
        """The set's pods that pass a rule reading only metadata (see `_metadata_view`)."""
        pods = self.pods.store.by_index(BY_SET, label_values(namespace, lws_name))
        return [self._pod_dict(p) for p in pods if rule(_metadata_view(p))]

    def set_held_pod_keys(self, namespace: str, lws_name: str) -> list[ObjectKey]:
        """The set's pods that hold the restart budget's cleanup finalizer (an index: no scan)."""
        return self.pods.store.keys_by_index(BY_SET_HELD, label_values(namespace, lws_name))

    def set_leader_pods(self, namespace: str, lws_name: str) -> list[MutableObj]:
        leaders = self.pods.store.by_index(BY_SET_LEADERS, label_values(namespace, lws_name))
        return [self._leader_views.of(p) for p in leaders]

    def gated_leader_keys(self, namespace: str, lws_name: str) -> list[ObjectKey]:
        """The set's leaders still behind the group-replacement gate (an index: this runs on every
        pod deletion of the set)."""
        return self.pods.store.keys_by_index(BY_SET_GATED_LEADERS, label_values(namespace, lws_name))

    def group_pods(self, namespace: str, lws_name: str, group_index: str) -> list[MutableObj]:
        value = label_values(namespace, lws_name, group_index)
        return [self._pod_dict(p) for p in self.pods.store.by_index(BY_GROUP, value)]

    def set_statefulsets(self, namespace: str, lws_name: str) -> list[MutableObj]:
        value = label_values(namespace, lws_name)
        return [self._statefulset_views.of(s) for s in self.statefulsets.store.by_index(BY_SET, value)]

    def statefulset(self, namespace: str, name: str) -> MutableObj | None:
        sts = self.statefulsets.store.get(ObjectKey(namespace, name))
        return None if sts is None else self._statefulset_views.of(sts)

    def deployment(self, namespace: str, name: str) -> MutableObj | None:
        deploy = self.deployments.store.get(ObjectKey(namespace, name))
        return None if deploy is None else as_dict(deploy)

    def pod(self, namespace: str, name: str) -> MutableObj | None:
        pod = self.pods.store.get(ObjectKey(namespace, name))
        return None if pod is None else self._pod_dict(pod)

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
            # Not the StatefulSet controller's revisions of our StatefulSets (one per worker
            # StatefulSet, each a whole pod template, that no set reads).
            label_selector=f"{selector},!{_STATEFULSET_HISTORY_LABEL}",
            indexers=_SET_INDEX,
        ),
        deployments=cache.informer(
            DEPLOYMENTS, DEPLOYMENT_CODEC, namespace=namespace, label_selector=selector
        ),
    )
