"""Reads and writes of child LeaderWorkerSets, with read-your-writes over the watch-fed cache.

A reconcile that runs before the watch has delivered our own last write (the 1 s rollout requeue,
a status event) must not plan from the older object, or it would repeat a scale step; `ChildMemo`
keeps every object a write returned until the cache holds that version or a newer one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers
from leaderworkerset.core.disaggregated.children import owned_children
from leaderworkerset.core.objects import (
    Obj,
    is_controlled_by,
    labels_of,
    metadata,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_already_exists
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.reflector import FuncHandler
from leaderworkerset.runtime.resources import LEADERWORKERSETS


class AdoptionRefusedError(Exception):
    """A child's name is held by an object this DisaggregatedSet does not control."""


def _rv(obj: Mapping[str, Any]) -> int:
    value = str(metadata(obj).get("resourceVersion") or "")
    return int(value) if value.isdigit() else 0


class ChildMemo:
    def __init__(self) -> None:
        self._written: dict[ObjectKey, Obj] = {}

    def remember(self, obj: Obj) -> None:
        self._written[ObjectKey(namespace_of(obj), name_of(obj))] = obj

    def forget(self, key: ObjectKey) -> None:
        self._written.pop(key, None)

    def merged(self, cached: Sequence[Obj], namespace: str, ds_name: str) -> list[Obj]:
        result: dict[ObjectKey, Obj] = {}
        for obj in cached:
            key = ObjectKey(namespace, name_of(obj))
            written = self._written.get(key)
            if written is not None and _rv(written) > _rv(obj):
                result[key] = written
            else:
                self._written.pop(key, None)
                result[key] = obj
        for key, obj in self._written.items():
            if (
                key.namespace == namespace
                and key not in result
                and labels_of(obj).get(c.LABEL_DS_NAME) == ds_name
            ):
                result[key] = obj  # created by us, not yet seen by the watch
        return list(result.values())


class Children:
    """The DS's own children (by its listing rules) and the writes the controller makes to them."""

    def __init__(self, client: KubeClient, informers: DisaggregatedSetInformers) -> None:
        self._client = client
        self._informers = informers
        self.memo = ChildMemo()

        def deleted(obj: Obj) -> None:
            self.memo.forget(ObjectKey(namespace_of(obj), name_of(obj)))

        informers.children.add_handler(FuncHandler(delete=deleted))

    def of(self, ds: Obj) -> list[Obj]:
        namespace, name = namespace_of(ds), name_of(ds)
        cached = self._informers.set_children(namespace, name)
        return owned_children(ds, self.memo.merged(cached, namespace, name))

    async def create(self, ds: Obj, body: Obj) -> bool:
        """Create a child; False when it already exists and is ours (a concurrent create won)."""
        try:
            created = await self._client.create(LEADERWORKERSETS, body)
        except Exception as err:
            if not is_already_exists(err):
                raise
            existing = await self._client.get(LEADERWORKERSETS, namespace_of(body), name_of(body))
            if not is_controlled_by(existing, ds):
                raise AdoptionRefusedError(
                    c.MSG_LWS_NOT_CONTROLLED_ADOPT % (name_of(body), name_of(ds))
                ) from err
            self.memo.remember(existing)
            return False
        self.memo.remember(created)
        return True

    async def patch(self, ds: Obj, lws: Obj, patch: Mapping[str, Any]) -> None:
        """Merge-patch a child the listing rules attributed to this DS (so it is controlled by it)."""
        if not is_controlled_by(lws, ds):
            raise AdoptionRefusedError(c.MSG_LWS_NOT_CONTROLLED_SCALE % (name_of(lws), name_of(ds)))
        patched = await self._client.merge_patch(LEADERWORKERSETS, namespace_of(lws), name_of(lws), patch)
        self.memo.remember(patched)

    async def scale(self, ds: Obj, lws: Obj, replicas: int) -> None:
        await self.patch(ds, lws, {"spec": {"replicas": replicas}})

    async def set_initial_replicas(self, ds: Obj, lws: Obj, value: int) -> None:
        await self.patch(
            ds, lws, {"metadata": {"annotations": {c.ANNOTATION_DS_INITIAL_REPLICAS: str(value)}}}
        )

    async def delete(self, lws: Obj) -> None:
        """Foreground deletion (its StatefulSets and Services go first) guarded by the UID, so a
        same-named replacement created since our read is never deleted."""
        await self._client.delete_incarnation(LEADERWORKERSETS, namespace_of(lws), name_of(lws), uid_of(lws))
        self.memo.forget(ObjectKey(namespace_of(lws), name_of(lws)))
