"""Deletion snapshots of group pods, fed by the pod informer.

A StatefulSet may re-create a same-name pod before the pod's reconcile runs, so the snapshot taken
at its deletion is the only trace of the failure the restart policy looks for.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.group.recovery import RestartOutcome
from leaderworkerset.controllers.informers import as_dict
from leaderworkerset.core.lifecycle.restart import replay_deleted_pod
from leaderworkerset.core.objects import MutableObj, labels_of, name_of, namespace_of
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import Pod

# Worker deletion snapshots waiting for their reconcile; beyond this, the oldest are dropped.
_SNAPSHOT_MEMORY = 10_000
_DELETED_MARK = "1970-01-01T00:00:00Z"

RestartPolicy = Callable[[MutableObj], Awaitable[RestartOutcome]]


class DeletionSnapshots:
    def __init__(self) -> None:
        self._snapshots: OrderedDict[ObjectKey, list[MutableObj]] = OrderedDict()

    def remember(self, pod: Pod) -> None:
        snapshot = as_dict(pod)
        if c.LABEL_SET_NAME not in labels_of(snapshot) or not replay_deleted_pod(snapshot):
            return
        # A pod removed without a grace period arrives without deletionTimestamp; its deletion is
        # still the failure signal the restart policy looks for.
        meta = dict(snapshot.get("metadata") or {})
        meta.setdefault("deletionTimestamp", _DELETED_MARK)
        snapshot["metadata"] = meta
        key = ObjectKey(namespace_of(snapshot), name_of(snapshot))
        self._snapshots.setdefault(key, []).append(snapshot)
        self._snapshots.move_to_end(key)
        while len(self._snapshots) > _SNAPSHOT_MEMORY:
            self._snapshots.popitem(last=False)

    async def replay(self, key: ObjectKey, restart_policy: RestartPolicy) -> float | None:
        """Apply the restart policy to each deletion snapshot; a failed one is kept for the retry,
        and so is one whose recreation backs off (the StatefulSet may already have replaced the
        pod, so the snapshot is the only trace of the failure): returns that wait."""
        pending = self._snapshots.pop(key, [])
        while pending:
            try:
                outcome = await restart_policy(pending[0])
            except Exception:
                self._snapshots[key] = [*pending, *self._snapshots.get(key, [])]
                raise
            if outcome.wait is not None:
                self._snapshots[key] = [*pending, *self._snapshots.get(key, [])]
                return outcome.wait
            pending.pop(0)
        return None
