"""Group restart counts the LWS no longer needs: pruned after a rollout, or when no
live Hash group can claim them."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.restartbudget import mutate_restart_counts
from leaderworkerset.core.lifecycle.restartbudget import (
    Counts,
    RestartCountsError,
    prune_hash_counts,
    prune_other_revisions,
    prune_settled_counts,
    restart_counts,
)
from leaderworkerset.core.objects import MutableObj, is_hash, lws_replicas
from leaderworkerset.core.rollout.partition import rollout_budget

# The package's logger, the one these lines had before the controller became a package.
log = structlog.get_logger(__package__)


class RestartCounts(Shell):
    async def prune_settled(self, round_: Round) -> None:
        """After a completed rollout, counts of old revisions and removed groups go.

        Decided on the cached LWS first so the steady state costs no read; the write itself is a
        fresh read-modify-write (the pod controller may be counting at the same time).
        """
        replicas, key = lws_replicas(round_.lws), round_.revision_key

        def prune(counts: Counts) -> bool:
            if is_hash(round_.lws):  # Hash keys are group keys, not indexes
                return prune_other_revisions(counts, key)
            return prune_settled_counts(counts, key, replicas)

        await self._mutate_if(round_, prune)

    async def prune_hash(self, round_: Round, leaders: list[MutableObj]) -> None:
        """Counts of the current revision that no live group can claim any more go (Hash identity)."""
        replicas, key = lws_replicas(round_.lws), round_.revision_key
        surge = rollout_budget(round_.lws).surge

        def prune(counts: Counts) -> bool:
            return prune_hash_counts(counts, key, leaders, replicas=replicas, surge=surge)

        await self._mutate_if(round_, prune)

    async def _mutate_if(self, round_: Round, mutate: Callable[[Counts], bool]) -> None:
        """Decide on the cached LWS (no read in the steady state), write on a fresh read."""
        try:
            needed = mutate(restart_counts(round_.lws))
        except RestartCountsError as err:
            log.warning("unreadable group restart counts; left as they are", error=str(err))
            return
        if needed:
            await mutate_restart_counts(self.client, round_.key.namespace, round_.key.name, mutate)
