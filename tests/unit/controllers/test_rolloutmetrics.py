"""The rollout metrics: one step observation per move of (partition, replicas) and one at the end,
the lowest ready ratio of the current rollout, series dropped with the set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry

from leaderworkerset.controllers.leaderworkerset.rolloutmetrics import RolloutTracker, new_rollout_metrics
from leaderworkerset.runtime.objects import ObjectKey

KEY = ObjectKey("ns", "lws")
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LABELS = {"namespace": "ns", "lws": "lws"}


def _value(registry: CollectorRegistry, name: str) -> float | None:
    return registry.get_sample_value(name, LABELS)


def test_steps_are_observed_once_each_and_the_lowest_ratio_is_kept() -> None:
    registry = CollectorRegistry()
    tracker = RolloutTracker(new_rollout_metrics(registry))
    # (seconds, under way, partition, replicas, ready of 4)
    for at, under_way, partition, replicas, ready in (
        (0, False, 0, 4, 4),  # steady: nothing observed
        (10, True, 4, 5, 4),  # the rollout starts: step 1
        (12, True, 4, 5, 4),  # same step, waiting
        (40, True, 3, 5, 3),  # step 2 after 30 s
        (70, True, 2, 5, 4),  # step 3 after 30 s
        (75, True, 2, 5, 4),
        (100, False, 0, 4, 4),  # done: step 3 ends after 30 s
        (200, False, 0, 4, 4),
    ):
        tracker.observe(
            KEY,
            under_way=under_way,
            step=("new", partition, replicas),
            ready=ready,
            target=4,
            now=T0 + timedelta(seconds=at),
        )
    assert _value(registry, "lws_rollout_step_duration_seconds_count") == 3
    assert _value(registry, "lws_rollout_step_duration_seconds_sum") == 90
    assert _value(registry, "lws_rollout_min_ready_ratio") == 0.75

    tracker.forget(KEY)
    assert _value(registry, "lws_rollout_step_duration_seconds_count") is None
    assert _value(registry, "lws_rollout_min_ready_ratio") is None


def test_a_new_rollout_starts_from_its_own_ratio() -> None:
    registry = CollectorRegistry()
    tracker = RolloutTracker(new_rollout_metrics(registry))
    tracker.observe(KEY, under_way=True, step=("a", 1, 2), ready=0, target=2, now=T0)
    tracker.observe(KEY, under_way=False, step=("a", 0, 2), ready=2, target=2, now=T0)
    tracker.observe(KEY, under_way=True, step=("b", 2, 2), ready=2, target=2, now=T0)
    assert _value(registry, "lws_rollout_min_ready_ratio") == 1.0
