"""The LWS's ControllerRevisions: find or create the round's revision, delete the old ones after a rollout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.generationmemo import GenerationMemo
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import RecentRevisions
from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.objects import MutableObj, is_deleting, name_of, namespace_of
from leaderworkerset.core.rollout.revision import (
    RevisionMatchCache,
    plan_revision,
    revision_patch,
    revisions_to_truncate,
)
from leaderworkerset.runtime.errors import is_already_exists, is_not_found, outcome_unknown
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import CONTROLLER_REVISIONS, LEADERWORKERSETS


@dataclass(eq=False)
class Revisions(Shell):
    _matches: RevisionMatchCache = field(default_factory=RevisionMatchCache)
    # Revisions created here that the cache may not show yet (or whose create lost its answer).
    recent: RecentRevisions = field(default_factory=RecentRevisions)
    # The set's template patch as Go renders it, once per spec generation.
    patches: GenerationMemo[bytes] = field(default_factory=lambda: GenerationMemo(revision_patch))

    def of(self, key: ObjectKey) -> list[MutableObj]:
        """The set's revisions: the cached ones and those created here that the cache lags."""
        cached = self.informers.set_revisions(key.namespace, key.name)
        return self.recent.merged(cached, key.namespace, key.name)

    async def ensure(self, round_: Round) -> bool:
        """Find or create the round's revision; False when the LWS turns out to be going away."""
        await self._settle_uncertain(round_.key)
        proposed = self.patches.get(round_.lws)
        plan = plan_revision(round_.lws, round_.leader_sts, self.of(round_.key), self._matches, proposed)
        if plan.create and _may_be_going(round_) and not await self._still_live(round_.key):
            # A set deleted in the foreground loses its revisions first: a cached LWS that lags the
            # revision cache would otherwise create one again for a set that is going.
            return False
        for revision, event in plan.create:
            await self._create_revision(revision)
            record(self.recorder, round_.lws, event)
        round_.revision, round_.revision_created = plan.revision, plan.updated
        return True

    async def truncate_history(self, round_: Round) -> None:
        """After a completed rollout, the revisions of other templates go."""
        for revision in revisions_to_truncate(round_.lws, round_.revision_key, self.of(round_.key)):
            try:
                await self.client.delete(CONTROLLER_REVISIONS, namespace_of(revision), name_of(revision))
            except Exception as err:
                if not is_not_found(err):
                    raise
            self.recent.discard(ObjectKey(namespace_of(revision), name_of(revision)))

    async def _still_live(self, key: ObjectKey) -> bool:
        """A fresh read: the LWS exists and is not being deleted (once per revision created for a
        set that already has its leader StatefulSet: a template change or a lost revision)."""
        fresh = await self.client.get_or_none(LEADERWORKERSETS, key.namespace, key.name)
        return fresh is not None and not is_deleting(fresh)

    async def _create_revision(self, revision: Mapping[str, Any]) -> None:
        # The data goes out as Go renders it, so the API server stores exactly the hashed bytes.
        body = {**revision, "data": msgspec.Raw(gojson.dumps(revision["data"]))}
        try:
            created = await self.client.create(CONTROLLER_REVISIONS, body)
        except Exception as err:
            if not is_already_exists(err):
                if outcome_unknown(err):
                    self.recent.add_uncertain(dict(revision))
                raise
            created = dict(revision)  # a same-named revision exists: the watch will show it
        self.recent.add(created)

    async def _settle_uncertain(self, key: ObjectKey) -> None:
        """Read back the revisions whose create lost its answer, unless the cache has them now."""
        pending = self.recent.uncertain(key.namespace, key.name)
        if not pending:
            return
        cached = {name_of(r) for r in self.informers.set_revisions(key.namespace, key.name)}
        for pending_key in pending:
            found = None
            if pending_key.name not in cached:
                found = await self.client.get_or_none(
                    CONTROLLER_REVISIONS, pending_key.namespace, pending_key.name
                )
            self.recent.settle(pending_key, found)


def _may_be_going(round_: Round) -> bool:
    """A set that was running before this round (its leader workload is cached, or it has a status):
    a missing revision may be the garbage collector's work on a set deleted in the foreground, which
    removes the leader StatefulSet too. A new set (no status yet) creates its first revision without
    the extra read."""
    return round_.leader_sts is not None or bool((round_.lws.get("status") or {}).get("conditions"))
