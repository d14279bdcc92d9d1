"""Node quarantine in admission: the nodes the pod webhook keeps a set's new pods off. (The
annotations are validated with the other set annotations: `core/setannotations.py`'s table.)

`QuarantineView` is what the pod webhook asks: a watch of LeaderWorkerSets (metadata only) keeps each
set's `leaderworkerset.dev/quarantined-nodes`, and admission reads the last one without waiting on
the API server (as `WorkloadApiProbe` does for discovery). The controller writes a quarantine before
it deletes the failed group's leader; the new leader is created only after the garbage collector has
removed the old group's workers and leader, and the watch delivers the annotation well before that.
Until the first list completes the view knows no quarantine, and admits pods unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.quarantine.decision import active_nodes
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.listwatch import HttpListerWatcher
from leaderworkerset.runtime.projections import METADATA_CODEC, MetadataOnly
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from leaderworkerset.runtime.store import Store

# (namespace, set name) -> the nodes the set's new pods must avoid.
QuarantinedNodes = Callable[[str, str], frozenset[str]]


class QuarantineView:
    """Callable as `QuarantinedNodes`; fed by its own watch of LeaderWorkerSets (`run`)."""

    def __init__(self, informer: Informer[MetadataOnly], clock: Callable[[], float] = time.time) -> None:
        self.informer = informer
        self._clock = clock

    @classmethod
    def watching(cls, client: KubeClient) -> QuarantineView:
        lister_watcher = HttpListerWatcher(client.transport, LEADERWORKERSETS)
        return cls(Informer("leaderworkersets.quarantine", lister_watcher, Store(METADATA_CODEC)))

    def __call__(self, namespace: str, name: str) -> frozenset[str]:
        raw = self.annotations(namespace, name).get(ext.ANNOTATION_QUARANTINED_NODES)
        return active_nodes(raw, self._clock()) if raw else frozenset()

    def annotations(self, namespace: str, name: str) -> Mapping[str, str]:
        """The set's annotations as last seen (none for a set the watch has not delivered): the pod
        webhook's view of other opt-in features too (in-place restart)."""
        lws = self.informer.store.get_by_name(namespace, name)
        return {} if lws is None else (lws.metadata.annotations or {})

    async def run(self) -> None:
        await self.informer.run()
