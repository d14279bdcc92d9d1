"""Honouring maxUnavailable where the cluster's StatefulSets ignore it (MaxUnavailableStatefulSet off).

After the leader StatefulSet is applied, `core.rollout.leaderreplacement.leader_replacements`
says which outdated leader pods the 1.37 StatefulSet controller would delete with the gate on;
this deletes them (each preconditioned on its UID, background propagation like the StatefulSet
controller's own deletions) and, the first time it does so for an update revision, records
MaxUnavailableEmulated on the LWS. On a cluster that keeps the field it reads nothing and does
nothing.

The budget holds when reconciles race the StatefulSet controller: both count terminating and
unavailable leader pods from the latest state, and the pods this process deleted are counted as
terminating until the cache shows it (`_deleted`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.core.objects import ControllerEvent, MutableObj, name_of
from leaderworkerset.core.rollout.leaderreplacement import (
    leader_replacements,
    may_replace,
    wanted_max_unavailable,
)
from leaderworkerset.runtime.errors import is_conflict, is_not_found
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import PODS

log = structlog.get_logger(__name__)

# Leader incarnations this process deleted, remembered so a cache that does not show the deletion
# yet still counts them as terminating.
_DELETED_MEMORY = 10_000


@dataclass(eq=False)
class LeaderReplacement(Shell):
    _deleted: OrderedDict[str, None] = field(default_factory=OrderedDict)
    # The update revision each LWS was last announced for (one MaxUnavailableEmulated per rollout).
    _announced: dict[ObjectKey, str] = field(default_factory=dict)

    async def step(self, round_: Round, leader_sts: MutableObj | None) -> None:
        """Delete the outdated leader pods the StatefulSet controller would with maxUnavailable."""
        if not may_replace(round_.lws, leader_sts):
            return  # the field is stored (the StatefulSet controller honours it), or nothing rolls
        key = round_.key
        # The latest cache state, not the round's read from before the apply.
        leaders = self.informers.set_leader_pods(key.namespace, key.name)
        deletions = leader_replacements(round_.lws, leader_sts, leaders, deleted_uids=self._deleted)
        deleted = 0
        for deletion in deletions:
            try:
                await self.client.delete(PODS, key.namespace, deletion.name, uid=deletion.uid)
            except Exception as err:
                if is_not_found(err) or is_conflict(err):
                    continue  # gone, or replaced by a same-name pod since the read
                raise
            log.info(
                "deleted outdated leader pod for update",
                lws=str(key),
                pod=deletion.name,
                reason=deletion.reason,
            )
            self._remember(deletion.uid)
            deleted += 1
        revision = str(((leader_sts or {}).get("status") or {}).get("updateRevision") or "")
        if deleted and self._announced.get(key) != revision:
            self._announced[key] = revision
            message = c.MSG_MAX_UNAVAILABLE_EMULATED % (
                name_of(round_.lws),
                wanted_max_unavailable(round_.lws),
                revision,
            )
            event = ControllerEvent(
                c.EVENT_TYPE_NORMAL, c.EVENT_MAX_UNAVAILABLE_EMULATED, c.EVENT_ACTION_DELETE, message
            )
            record(self.recorder, round_.lws, event)

    def forget(self, key: ObjectKey) -> None:
        self._announced.pop(key, None)

    def _remember(self, uid: str) -> None:
        self._deleted[uid] = None
        while len(self._deleted) > _DELETED_MEMORY:
            self._deleted.popitem(last=False)
