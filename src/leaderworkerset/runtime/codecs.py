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
    """Decodes into a msgspec Struct whose `metadata` is an ObjectMeta-like struct."""

    def __init__(self, cls: type[S]) -> None:
        self.cls = cls
        self._object = msgspec.json.Decoder(cls)
        self._list = msgspec.json.Decoder(ListPage[cls])  # type: ignore[valid-type]

    def decode_object(self, raw: bytes) -> S:
        return _interned(self._object.decode(raw))

    def decode_list(self, raw: bytes) -> ListPage[S]:
        page: ListPage[S] = self._list.decode(raw)
        for item in page.items or ():
            _interned(item)
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
    `leaderworkerset.sigs.k8s.io/name`, the set name, revision hashes, group indexes): msgspec
    gives each decoded object its own copies. Values are interned too; distinct ones (e.g. group
    keys) stay alive only as long as some object uses them."""
    meta = getattr(obj, "metadata", None)
    if isinstance(meta, ObjectMeta):
        meta.labels = _intern_strings(meta.labels)
        meta.annotations = _intern_strings(meta.annotations)
    return obj


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
