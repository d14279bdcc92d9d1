"""Rollout metrics of the LWS controller: how long each step took, how low capacity went.

Registered on the manager's injectable registry, like the runtime families (`runtime/metrics.py`).
A step is the time between two moves of the leader StatefulSet's `(partition, replicas)` while a
rollout is under way (the set still has a ControllerRevision of another template); the last step
ends when the rollout is done. The tracker keeps the step start in memory: a controller restarted
mid-step observes no duration for that step rather than a made-up one. `RolloutObserver` feeds the
tracker from an Ordinal round: what it applied, how many groups were ready.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram

from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.core.objects import lws_replicas
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.objects import ObjectKey

# Steps wait for groups to get ready: seconds to hours.
STEP_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0)
_LABELS = ("namespace", "lws")


@dataclass(frozen=True)
class RolloutMetrics:
    step_duration: Histogram
    min_ready_ratio: Gauge


def new_rollout_metrics(registry: CollectorRegistry) -> RolloutMetrics:
    return RolloutMetrics(
        step_duration=Histogram(
            "lws_rollout_step_duration_seconds",
            "Seconds one rollout step of a LeaderWorkerSet took, from moving the leader StatefulSet's "
            "partition or replicas to the next move (or the end of the rollout)",
            _LABELS,
            buckets=STEP_BUCKETS,
            registry=registry,
        ),
        min_ready_ratio=Gauge(
            "lws_rollout_min_ready_ratio",
            "Lowest ready groups / spec.replicas seen during the current (or last) rollout of a "
            "LeaderWorkerSet",
            _LABELS,
            registry=registry,
        ),
    )


Step = tuple[str, int, int]  # revision key, partition, replicas


@dataclass
class _Rollout:
    step: Step
    step_started: datetime.datetime
    min_ratio: float


class RolloutTracker:
    """Turns what each reconcile applied into step observations and the lowest ready ratio."""

    def __init__(self, metrics: RolloutMetrics) -> None:
        self._metrics = metrics
        self._active: dict[ObjectKey, _Rollout] = {}

    def observe(
        self,
        key: ObjectKey,
        *,
        under_way: bool,
        step: Step,
        ready: int,
        target: int,
        now: datetime.datetime,
    ) -> None:
        labels = (key.namespace, key.name)
        rollout = self._active.get(key)
        if not under_way:
            if rollout is not None:
                self._finish_step(labels, rollout, now)
                del self._active[key]
            return
        ratio = 1.0 if target <= 0 else ready / target
        if rollout is None:
            rollout = self._active[key] = _Rollout(step, now, ratio)
        elif rollout.step != step:
            self._finish_step(labels, rollout, now)
            rollout.step, rollout.step_started = step, now
        rollout.min_ratio = min(rollout.min_ratio, ratio)
        self._metrics.min_ready_ratio.labels(*labels).set(rollout.min_ratio)

    def _finish_step(self, labels: tuple[str, str], rollout: _Rollout, now: datetime.datetime) -> None:
        seconds = max(0.0, (now - rollout.step_started).total_seconds())
        self._metrics.step_duration.labels(*labels).observe(seconds)

    def forget(self, key: ObjectKey) -> None:
        """The LWS is gone: drop its series."""
        self._active.pop(key, None)
        labels = (key.namespace, key.name)
        for family in (self._metrics.step_duration, self._metrics.min_ready_ratio):
            with contextlib.suppress(KeyError):  # never observed
                family.remove(*labels)


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
