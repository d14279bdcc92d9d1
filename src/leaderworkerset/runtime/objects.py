"""Object identity and the slice of metadata the runtime needs from every cached object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import msgspec


class ObjectKey(NamedTuple):
    """namespace/name of an object; the namespace is "" for cluster-scoped objects."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class OwnerRefLike(Protocol):
    @property
    def apiVersion(self) -> str: ...  # noqa: N802 - Kubernetes field name
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def controller(self) -> bool | None: ...


class MetaLike(Protocol):
    """Satisfied by our `ObjectMeta` projection and by lightkube's `meta_v1.ObjectMeta`."""

    @property
    def name(self) -> str | None: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def uid(self) -> str | None: ...
    @property
    def resourceVersion(self) -> str | None: ...  # noqa: N802
    @property
    def labels(self) -> Mapping[str, str] | None: ...
    @property
    def ownerReferences(self) -> Sequence[OwnerRefLike] | None: ...  # noqa: N802


class OwnerReference(msgspec.Struct, omit_defaults=True, gc=False):
    apiVersion: str = ""  # noqa: N815
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    blockOwnerDeletion: bool | None = None  # noqa: N815


class ObjectMeta(msgspec.Struct, omit_defaults=True, gc=False):
    """The metadata fields controllers read; unknown fields are skipped while decoding."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resourceVersion: str | None = None  # noqa: N815
    generation: int | None = None
    creationTimestamp: str | None = None  # noqa: N815
    deletionTimestamp: str | None = None  # noqa: N815
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[OwnerReference] | None = None  # noqa: N815
    finalizers: list[str] | None = None


def key_of(meta: MetaLike) -> ObjectKey:
    return ObjectKey(meta.namespace or "", meta.name or "")


def controller_of(meta: MetaLike) -> OwnerRefLike | None:
    """The owner reference with controller=true, as metav1.GetControllerOf."""
    for ref in meta.ownerReferences or ():
        if ref.controller:
            return ref
    return None


def meta_from_dict(obj: Mapping[str, Any]) -> ObjectMeta:
    return msgspec.convert(obj.get("metadata") or {}, ObjectMeta)
