"""What only a spec change can change, computed once per generation of the object.

A set's revision data (the Go rendering of an LWS's templates, the hash of a DisaggregatedSet's
roles) depends on its spec alone, and the API server raises `metadata.generation` on every spec
change of a resource with a status subresource, so (uid, generation) names one spec exactly. A busy
set is reconciled many times per generation (each child, StatefulSet and pod event wakes it), and
rendering its templates the Go way every time was the largest own cost of a DisaggregatedSet
rollout. One entry per live object: replaced when its generation moves, dropped on its deletion.
An object without a uid or generation (never stored) is computed every time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.reflector import FuncHandler, Informer

V = TypeVar("V")


class GenerationMemo(Generic[V]):
    def __init__(self, compute: Callable[[Mapping[str, Any]], V]) -> None:
        self._compute = compute
        self._entries: dict[ObjectKey, tuple[str, int, V]] = {}
        self.computed = 0  # how often `compute` ran (the benchmarks and tests read it)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: Mapping[str, Any]) -> V:
        meta = obj.get("metadata") or {}
        uid, generation = str(meta.get("uid") or ""), int(meta.get("generation") or 0)
        if not uid or not generation:
            self.computed += 1
            return self._compute(obj)
        key = ObjectKey(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        entry = self._entries.get(key)
        if entry is not None and entry[0] == uid and entry[1] == generation:
            return entry[2]
        value = self._compute(obj)
        self.computed += 1
        self._entries[key] = (uid, generation, value)
        return value

    def forget(self, key: ObjectKey) -> None:
        self._entries.pop(key, None)

    def forget_on_delete(self, informer: Informer[Any]) -> None:
        meta = informer.store.codec.meta

        def deleted(obj: Any) -> None:
            m = meta(obj)
            self.forget(ObjectKey(m.namespace or "", m.name or ""))

        informer.add_handler(FuncHandler(delete=deleted))
