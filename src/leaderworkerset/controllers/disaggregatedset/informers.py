"""The watch-fed caches the DisaggregatedSet controller reads, declared once per manager.

Children (LWS), Services and role scalers are filtered on the server by the presence of the
`disaggregatedset.x-k8s.io/name` label and indexed by (namespace, DS name), so a reconcile reads
only its own objects. They are separate from the LWS controllers' caches, so either controller can
run without the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import as_dict
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import METADATA_CODEC, MetadataOnly
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, DS_ROLE_SCALERS, LEADERWORKERSETS, SERVICES
from leaderworkerset.runtime.store import IndexFunc, index_by_namespaced_labels, label_values

BY_DS = "ds-name"  # namespace, DS name
T = TypeVar("T")


def _ds_index() -> dict[str, IndexFunc[T]]:
    return {BY_DS: index_by_namespaced_labels(c.LABEL_DS_NAME)}


@dataclass
class DisaggregatedSetInformers:
    sets: Informer[MutableObj]
    children: Informer[MutableObj]
    services: Informer[MetadataOnly]
    scalers: Informer[MutableObj]

    def set_children(self, namespace: str, ds_name: str) -> list[MutableObj]:
        return list(self.children.store.by_index(BY_DS, label_values(namespace, ds_name)))

    def set_services(self, namespace: str, ds_name: str) -> list[MutableObj]:
        return [as_dict(s) for s in self.services.store.by_index(BY_DS, label_values(namespace, ds_name))]

    def service(self, namespace: str, name: str) -> MutableObj | None:
        service = self.services.store.get(ObjectKey(namespace, name))
        return None if service is None else as_dict(service)

    def set_scalers(self, namespace: str, ds_name: str) -> list[MutableObj]:
        return list(self.scalers.store.by_index(BY_DS, label_values(namespace, ds_name)))


def ds_informers(cache: Cache, namespace: str | None = None) -> DisaggregatedSetInformers:
    selector = c.LABEL_DS_NAME
    return DisaggregatedSetInformers(
        sets=cache.informer(DISAGGREGATEDSETS, DictCodec(), namespace=namespace),
        children=cache.informer(
            LEADERWORKERSETS,
            DictCodec(),
            namespace=namespace,
            label_selector=selector,
            indexers=_ds_index(),
            name="leaderworkersets.ds-children",
        ),
        services=cache.informer(
            SERVICES,
            METADATA_CODEC,
            namespace=namespace,
            label_selector=selector,
            indexers=_ds_index(),
            name="services.ds-private",
        ),
        scalers=cache.informer(
            DS_ROLE_SCALERS, DictCodec(), namespace=namespace, label_selector=selector, indexers=_ds_index()
        ),
    )
