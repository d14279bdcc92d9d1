"""Read-your-writes memories of the controllers: what this process wrote that the caches may not show yet.

* `WriteMemo` keeps the object a write returned until the watch delivers that version (or a newer
  one, or a deletion), so the next reconcile does not act on a stale cache entry — e.g. it would
  otherwise announce "Created leader statefulset" twice;
* `RecentRevisions` does the same for ControllerRevisions created in this process;
* `StatefulSetDeletions` tells whether the pod cache has caught up with a StatefulSet deletion;
* `AppliedIntents` spares the server-side applies that would change nothing (the leader
  StatefulSet was re-applied on every LWS reconcile, about one PATCH per group in a create).

They live apart from the caches (`informers.py`) because they hold what we wrote, not what we watch.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj, owner_uids
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import Pod, StatefulSet
from leaderworkerset.runtime.reflector import FuncHandler, Informer


def _version(resource_version: str | None) -> int:
    """resourceVersion as an integer (etcd revisions); an opaque or missing one as 0."""
    value = resource_version or ""
    return int(value) if value.isdigit() else 0


def _rv(obj: Mapping[str, Any] | None) -> int:
    return 0 if obj is None else _version(str((obj.get("metadata") or {}).get("resourceVersion") or ""))


class WriteMemo:
    """The last object written per key, used until the cache holds that version or a newer one."""

    def __init__(self) -> None:
        self._written: dict[ObjectKey, MutableObj] = {}

    def remember(self, key: ObjectKey, written: MutableObj) -> None:
        self._written[key] = written

    def forget(self, key: ObjectKey) -> None:
        self._written.pop(key, None)

    def is_own_write(self, key: ObjectKey, resource_version: str | None) -> bool:
        """Whether the watch delivers exactly the version our last write of `key` returned."""
        written = self._written.get(key)
        return written is not None and _rv(written) == _version(resource_version) != 0

    def freshest(
        self, key: ObjectKey, cached: MutableObj | None, cache_version: str = ""
    ) -> MutableObj | None:
        """`cache_version` is the resourceVersion the cache has seen up to: an object it does not
        hold although it has seen past our write was deleted since (a relist after a watch gap
        reports no deletion of an object the cache never held)."""
        written = self._written.get(key)
        if written is None:
            return cached
        if cached is not None and _rv(cached) >= _rv(written):
            self.forget(key)
            return cached
        seen_up_to = _version(cache_version)  # 0: the cache cannot tell
        if cached is None and seen_up_to and seen_up_to >= _rv(written):
            self.forget(key)
            return None
        return written

    def forget_on_delete(self, informer: Informer[Any]) -> None:
        """A deletion observed by the watch ends what we remember about that object."""
        _forget_on_delete(informer, self.forget)


def _forget_on_delete(informer: Informer[Any], forget: Callable[[ObjectKey], None]) -> None:
    meta = informer.store.codec.meta

    def deleted(obj: Any) -> None:
        m = meta(obj)
        forget(ObjectKey(m.namespace or "", m.name or ""))

    informer.add_handler(FuncHandler(delete=deleted))


class StatefulSetDeletions:
    """Whether the pod cache has seen a StatefulSet's absence as the StatefulSet cache does.

    The pod controller builds a group when the StatefulSet cache shows no worker StatefulSet for a
    cached leader. If that StatefulSet existed and was deleted, its leader was deleted first (the
    garbage collector removes dependents after their owner starts going), so a pod cache that has
    reached the deletion's resourceVersion shows that leader leaving; one behind it may still show
    the leader alive. resourceVersions are etcd revisions, one sequence for all kinds.

    A deletion seen in the watch carries its own resourceVersion; one found by a relist does not,
    so it counts as at the StatefulSet cache's version. Deletions before this process started are
    covered by the version the StatefulSet cache had when first asked (the `floor`); forgotten
    ones (beyond `memory`) raise the floor. Every approximation errs toward "not seen yet".
    """

    def __init__(
        self, statefulsets: Informer[StatefulSet], pods: Informer[Pod], memory: int = 10_000
    ) -> None:
        self._statefulsets, self._pods, self._memory = statefulsets, pods, memory
        self._deleted: OrderedDict[ObjectKey, int | None] = OrderedDict()  # None: found by a relist
        self._floor: int | None = None
        statefulsets.add_handler(FuncHandler(delete=self._record))

    def _record(self, sts: StatefulSet) -> None:
        meta = sts.metadata
        deleted_at = _version(meta.resourceVersion)
        # A watch delivers the deleted object at the deletion's version, past the cache's; a relist
        # reports the cached object, at or before it.
        exact = deleted_at > _version(self._statefulsets.store.resource_version)
        key = ObjectKey(meta.namespace or "", meta.name or "")
        self._deleted[key] = deleted_at if exact else None
        self._deleted.move_to_end(key)
        while len(self._deleted) > self._memory:
            _, forgotten = self._deleted.popitem(last=False)
            self._floor = max(self._floor or 0, self._resolve(forgotten))

    def _resolve(self, deleted_at: int | None) -> int:
        return _version(self._statefulsets.store.resource_version) if deleted_at is None else deleted_at

    def seen_by_pods(self, key: ObjectKey) -> bool:
        """Whether the pod cache has caught up with what the StatefulSet cache knows of ``key``."""
        if self._floor is None:
            self._floor = _version(self._statefulsets.store.resource_version)
        needed = self._floor
        if key in self._deleted:
            needed = max(needed, self._resolve(self._deleted[key]))
        return needed > 0 and _version(self._pods.store.resource_version) >= needed


@dataclass(frozen=True)
class _Applied:
    digest: bytes
    uid: str
    generation: int


class AppliedIntents:
    """The last body this process server-side applied per object, to skip an apply that would
    change nothing: the same body, onto the same object (UID) still at the generation our apply
    left it, still carrying the labels, annotations and owner references we set.

    Another writer's spec edit bumps the generation and a metadata edit shows in the live object,
    so both are applied over again, as an apply on every round would. Status writes (the
    StatefulSet controller's) change neither. Nothing survives a restart: the first round of a new
    process always applies.
    """

    def __init__(self) -> None:
        self._applied: dict[ObjectKey, _Applied] = {}

    @staticmethod
    def _digest(body: Mapping[str, Any]) -> bytes:
        return hashlib.blake2b(msgspec.json.encode(body), digest_size=16).digest()

    def unchanged(self, key: ObjectKey, body: Mapping[str, Any], live: Mapping[str, Any] | None) -> bool:
        applied = self._applied.get(key)
        if applied is None or live is None:
            return False
        meta = live.get("metadata") or {}
        want = body.get("metadata") or {}
        return (
            meta.get("uid") == applied.uid
            and meta.get("generation") == applied.generation
            and meta.get("deletionTimestamp") is None
            and _has_all(meta.get("labels"), want.get("labels"))
            and _has_all(meta.get("annotations"), want.get("annotations"))
            and owner_uids(live) >= owner_uids(body)
            and self._digest(body) == applied.digest
        )

    def remember(self, key: ObjectKey, body: Mapping[str, Any], applied: Mapping[str, Any]) -> None:
        meta = applied.get("metadata") or {}
        self._applied[key] = _Applied(
            self._digest(body), str(meta.get("uid") or ""), int(meta.get("generation") or 0)
        )

    def forget(self, key: ObjectKey) -> None:
        self._applied.pop(key, None)

    def forget_on_delete(self, informer: Informer[Any]) -> None:
        _forget_on_delete(informer, self.forget)


def _has_all(live: Mapping[str, str] | None, wanted: Mapping[str, str] | None) -> bool:
    have = live or {}
    return all(have.get(k) == v for k, v in (wanted or {}).items())


class RecentRevisions:
    """ControllerRevisions this process created that the cache may not show yet, and those whose
    create lost its answer (`uncertain`): they may exist, and must be read back before another round
    plans, or it would create a twin under the next number (connection cuts)."""

    def __init__(self) -> None:
        self._created: dict[ObjectKey, MutableObj] = {}
        self._uncertain: dict[ObjectKey, MutableObj] = {}

    @staticmethod
    def _key(revision: MutableObj) -> ObjectKey:
        meta = revision.get("metadata") or {}
        return ObjectKey(meta.get("namespace") or "", meta.get("name") or "")

    def add(self, revision: MutableObj) -> None:
        self._created[self._key(revision)] = revision

    def add_uncertain(self, revision: MutableObj) -> None:
        self._uncertain[self._key(revision)] = revision

    def uncertain(self, namespace: str, lws_name: str) -> list[ObjectKey]:
        return [
            key
            for key, r in self._uncertain.items()
            if key.namespace == namespace
            and ((r.get("metadata") or {}).get("labels") or {}).get(c.LABEL_SET_NAME) == lws_name
        ]

    def settle(self, key: ObjectKey, found: MutableObj | None) -> None:
        """An uncertain create read back: `found` is the revision if it exists (None: it does not,
        or the cache holds it already)."""
        self._uncertain.pop(key, None)
        if found is not None:
            self.add(found)

    def discard(self, key: ObjectKey) -> None:
        self._created.pop(key, None)

    def merged(self, cached: list[MutableObj], namespace: str, lws_name: str) -> list[MutableObj]:
        names = {(r.get("metadata") or {}).get("name") for r in cached}
        for key in [k for k in self._created if k.namespace == namespace and k.name in names]:
            del self._created[key]  # the watch caught up
        extra = [
            r
            for k, r in self._created.items()
            if k.namespace == namespace
            and ((r.get("metadata") or {}).get("labels") or {}).get(c.LABEL_SET_NAME) == lws_name
        ]
        return [*cached, *extra]
