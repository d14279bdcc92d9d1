"""How a watched kind is decoded into cache objects.

Two representations, chosen per watched kind (see benchmarks/runtime_decode.py for the numbers):
* `StructCodec(Projection)`: msgspec decodes straight into a Struct that declares only the fields the
  controllers read and skips the rest. Fast and small; used for the high-volume kinds (pods,
  StatefulSets, ...). A field not declared in the projection is simply absent, so projections must
  grow with the controllers' needs.
* `DictCodec()`: the whole object as plain dicts/lists. Used where controllers need every field
  (LeaderWorkerSet/DisaggregatedSet specs feed revision hashing and server-side apply).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.objects import MetaLike, ObjectMeta, meta_from_dict

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ListMeta(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815
    continue_: str | None = msgspec.field(default=None, name="continue")


class ListPage(msgspec.Struct, Generic[T]):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] | None = None


class Codec(Protocol[T]):
    def decode_object(self, raw: bytes) -> T: ...

    def decode_list(self, raw: bytes) -> ListPage[T]: ...

    def meta(self, obj: T) -> MetaLike: ...


class HasMetadata(Protocol):
    @property
    def metadata(self) -> Any: ...


S = TypeVar("S", bound=msgspec.Struct)


class StructCodec(Generic[S]):
    """Decodes into a msgspec Struct whose `metadata` is an ObjectMeta-like struct.

    `share`, when given, runs on every decoded object before it is returned: it replaces parts that
    many objects repeat with one shared instance (see `SharedValues`)."""

    def __init__(self, cls: type[S], share: Callable[[S], object] | None = None) -> None:
        self.cls = cls
        self._object = msgspec.json.Decoder(cls)
        self._list = msgspec.json.Decoder(ListPage[cls])  # type: ignore[valid-type]
        self._share = share

    def decode_object(self, raw: bytes) -> S:
        obj = _interned(self._object.decode(raw))
        if self._share is not None:
            self._share(obj)
        return obj

    def decode_list(self, raw: bytes) -> ListPage[S]:
        page: ListPage[S] = self._list.decode(raw)
        share = self._share
        for item in page.items or ():
            _interned(item)
            if share is not None:
                share(item)
        return page

    def meta(self, obj: S) -> MetaLike:
        meta: MetaLike = getattr(obj, "metadata")  # noqa: B009 - Structs declare it, Struct has no protocol
        return meta


def _intern_strings(values: dict[str, str] | None) -> dict[str, str] | None:
    if not values:
        return values
    return {sys.intern(key): sys.intern(value) for key, value in values.items()}


def _interned(obj: S) -> S:
    """Share the label and annotation strings every cached object repeats (keys such as
    `leaderworkerset.sigs.k8s.io/name`, the set name, revision hashes, group indexes), its namespace
    and its owners' kinds: msgspec gives each decoded object its own copies. Values are interned
    too; distinct ones (e.g. group keys) stay alive only as long as some object uses them."""
    meta = getattr(obj, "metadata", None)
    if isinstance(meta, ObjectMeta):
        meta.labels = _intern_strings(meta.labels)
        meta.annotations = _intern_strings(meta.annotations)
        if meta.namespace is not None:
            meta.namespace = sys.intern(meta.namespace)
        for owner in meta.ownerReferences or ():
            owner.apiVersion = sys.intern(owner.apiVersion)
            owner.kind = sys.intern(owner.kind)
    return obj


V = TypeVar("V")


class SharedValues(Generic[V]):
    """One instance per distinct value, for parts of cached objects that many objects repeat (the
    pods of one template carry the same containers and tolerations): each decoded copy is swapped
    for the first equal one, so a value costs once, not once per object. Shared values must never
    be mutated; cached objects are read-only (readers get `msgspec.to_builtins` copies).

    The table is bounded, not weak (gc=False Structs take no weak references): past `bound`
    distinct values it starts afresh, which only costs sharing, never correctness."""

    def __init__(self, bound: int = 4096) -> None:
        self._bound = bound
        self._values: dict[Hashable, V] = {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable, value: V) -> V:
        """The shared instance equal to `value`; `key` identifies it (equal keys ⇔ equal values)."""
        shared = self._values.get(key)
        if shared is None:
            if len(self._values) >= self._bound:
                self._values.clear()
            self._values[key] = shared = value
        return shared


class DictCodec:
    """Keeps whole objects as plain dicts (what a JSON decode gives)."""

    def __init__(self) -> None:
        self._object = msgspec.json.Decoder(dict[str, Any])
        self._list = msgspec.json.Decoder(ListPage[dict[str, Any]])

    def decode_object(self, raw: bytes) -> MutableObj:
        return self._object.decode(raw)

    def decode_list(self, raw: bytes) -> ListPage[MutableObj]:
        return self._list.decode(raw)

    def meta(self, obj: MutableObj) -> ObjectMeta:
        return meta_from_dict(obj)
