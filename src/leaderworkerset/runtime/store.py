"""The in-memory cache of one watched kind, with O(1) secondary indexes.

The reflector is the only writer; reconcilers read. Objects are stored as their codec decoded them
(projection Struct or dict) and must be treated as read-only: copy before modifying.

Indexes map an index value to the set of object keys, like client-go's Indexer. An index function
receives the object's metadata and the object and returns the values to file it under. Built-in:
`NAMESPACE_INDEX` (always present) and the helpers below for owners and labels.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from leaderworkerset.runtime.codecs import Codec
from leaderworkerset.runtime.objects import MetaLike, ObjectKey, controller_of, key_of

T = TypeVar("T")

IndexFunc = Callable[[MetaLike, T], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "owner-uid"
CONTROLLER_UID_INDEX = "controller-uid"


def index_by_namespace(meta: MetaLike, _obj: object) -> Iterable[str]:
    return (meta.namespace or "",)


def index_by_owner_uid(meta: MetaLike, _obj: object) -> Iterable[str]:
    """Every owner's UID (garbage-collection owners as well as the controller)."""
    return [ref.uid for ref in meta.ownerReferences or () if ref.uid]


def index_by_controller_uid(meta: MetaLike, _obj: object) -> Iterable[str]:
    ref = controller_of(meta)
    return (ref.uid,) if ref is not None and ref.uid else ()


def label_values(*values: str) -> str:
    """The index value `index_by_labels` files an object under for these label values (in order)."""
    return "\x00".join(values)


def index_by_labels(*label_keys: str) -> Callable[[MetaLike, object], Iterable[str]]:
    """Index by the values of one or more labels; objects missing any of them are not indexed.

    Look up with `store.by_index(name, label_values(v1, v2, ...))`; values are scoped per namespace
    only if you include the namespace yourself, e.g. via `index_by_namespaced_labels`.
    """

    def index(meta: MetaLike, _obj: object) -> Iterable[str]:
        labels = meta.labels or {}
        try:
            return (label_values(*(labels[k] for k in label_keys)),)
        except KeyError:
            return ()

    return index


def index_by_namespaced_labels(*label_keys: str) -> Callable[[MetaLike, object], Iterable[str]]:
    """Like `index_by_labels` but the namespace is the first value: label_values(ns, v1, ...)."""
    inner = index_by_labels(*label_keys)

    def index(meta: MetaLike, obj: object) -> Iterable[str]:
        return [label_values(meta.namespace or "", value) for value in inner(meta, obj)]

    return index


class Store(Generic[T]):
    def __init__(self, codec: Codec[T], indexers: dict[str, IndexFunc[T]] | None = None) -> None:
        self.codec = codec
        self._items: dict[ObjectKey, T] = {}
        self._indexers: dict[str, IndexFunc[T]] = {NAMESPACE_INDEX: index_by_namespace}
        self._indexers.update(indexers or {})
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {name: {} for name in self._indexers}
        # The values each object is filed under, so an update or delete can unfile it exactly.
        self._filed: dict[ObjectKey, dict[str, tuple[str, ...]]] = {}
        self.resource_version = ""

    # ----- configuration ------------------------------------------------------------------------
    def add_indexer(self, name: str, fn: IndexFunc[T]) -> None:
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = fn
        self._indices[name] = {}
        for key, obj in self._items.items():
            values = tuple(fn(self.codec.meta(obj), obj))
            self._filed[key][name] = values
            self._file(name, key, values)

    def has_index(self, name: str) -> bool:
        return name in self._indexers

    # ----- reads --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def get(self, key: ObjectKey) -> T | None:
        return self._items.get(key)

    def get_by_name(self, namespace: str, name: str) -> T | None:
        return self._items.get(ObjectKey(namespace, name))

    def keys(self) -> list[ObjectKey]:
        return list(self._items)

    def list(self, namespace: str | None = None) -> builtins.list[T]:
        if namespace is None:
            return list(self._items.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def keys_by_index(self, index: str, value: str) -> builtins.list[ObjectKey]:
        try:
            return list(self._indices[index].get(value, ()))
        except KeyError:
            raise KeyError(f"no indexer named {index!r}") from None

    def by_index(self, index: str, value: str) -> builtins.list[T]:
        return [self._items[key] for key in self.keys_by_index(index, value)]

    def index_values(self, index: str) -> builtins.list[str]:
        return list(self._indices[index])

    # ----- writes (reflector only) --------------------------------------------------------------
    def upsert(self, obj: T) -> tuple[ObjectKey, T | None]:
        """Insert or replace; returns the key and the previous object, if any."""
        meta = self.codec.meta(obj)
        key = key_of(meta)
        old = self._items.get(key)
        if old is not None:
            self._unfile_all(key)
        self._items[key] = obj
        filed = {name: tuple(fn(meta, obj)) for name, fn in self._indexers.items()}
        self._filed[key] = filed
        for name, values in filed.items():
            self._file(name, key, values)
        return key, old

    def delete(self, key: ObjectKey) -> T | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unfile_all(key)
        return old

    def _file(self, index: str, key: ObjectKey, values: tuple[str, ...]) -> None:
        buckets = self._indices[index]
        for value in values:
            buckets.setdefault(value, set()).add(key)

    def _unfile_all(self, key: ObjectKey) -> None:
        for name, values in self._filed.pop(key, {}).items():
            buckets = self._indices[name]
            for value in values:
                bucket = buckets.get(value)
                if bucket is None:
                    continue
                bucket.discard(key)
                if not bucket:
                    del buckets[value]
