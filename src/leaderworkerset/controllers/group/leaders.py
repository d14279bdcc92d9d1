"""Deleting a leader to recreate (or stop) its group, at most once per leader incarnation."""

from __future__ import annotations

from collections import OrderedDict

from leaderworkerset.controllers.events import record
from leaderworkerset.core.objects import ControllerEvent, MutableObj
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import PODS

# Leaders this process deleted for a group restart, remembered so a stale cache read of the same
# leader cannot delete it (and announce RecreateGroup) a second time.
_DELETED_LEADERS_MEMORY = 10_000


class LeaderDeletions:
    def __init__(self, client: KubeClient, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder
        self._deleted: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, uid: object) -> bool:
        """Whether this process already deleted the leader incarnation with that UID."""
        return uid in self._deleted

    async def delete(
        self, lws: MutableObj, namespace: str, name: str, uid: str, event: ControllerEvent | None
    ) -> bool:
        """Foreground deletion (workers go first), preconditioned on the leader's UID so a
        same-name replacement is never hit; at most once per leader incarnation."""
        if not await self._client.delete_incarnation(PODS, namespace, name, uid):
            return False  # gone, or replaced by a same-name leader: nothing left to restart
        self._deleted[uid] = None
        while len(self._deleted) > _DELETED_LEADERS_MEMORY:
            self._deleted.popitem(last=False)
        if event is not None:
            record(self._recorder, lws, event)
        return True
