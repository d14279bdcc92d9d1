"""The rollout metrics of an Ordinal round (controllers/rolloutmetrics.py): what it applied, how
many groups were ready."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.rolloutmetrics import RolloutMetrics, RolloutTracker
from leaderworkerset.core.objects import lws_replicas
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.objects import ObjectKey


class RolloutObserver:
    def __init__(self, metrics: RolloutMetrics | None, clock: Clock) -> None:
        self._tracker = None if metrics is None else RolloutTracker(metrics)
        self._clock = clock

    def observe(self, round_: Round, status: Mapping[str, Any], update_done: bool) -> None:
        if self._tracker is None or round_.decision is None:
            return
        self._tracker.observe(
            round_.key,
            under_way=round_.under_way and not update_done,
            step=(round_.revision_key, round_.decision.partition, round_.decision.replicas),
            ready=int(status.get("readyReplicas") or 0),
            target=lws_replicas(round_.lws),
            now=self._clock.wall(),
        )

    def forget(self, key: ObjectKey) -> None:
        """The LWS is gone: drop its series."""
        if self._tracker is not None:
            self._tracker.forget(key)
