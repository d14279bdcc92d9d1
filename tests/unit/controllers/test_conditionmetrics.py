"""lws_status_condition: one series per condition the status carries (1 True, 0 otherwise), a
condition that leaves the status leaves the scrape, and the set's series go with it."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.leaderworkerset.conditionmetrics import STATUS_CONDITION, ConditionMetrics
from leaderworkerset.runtime.objects import ObjectKey

KEY = ObjectKey("ns", "lws")


def _value(registry: CollectorRegistry, condition: str) -> float | None:
    return registry.get_sample_value(
        STATUS_CONDITION, {"namespace": "ns", "lws": "lws", "condition": condition}
    )


def _status(**conditions: str) -> dict[str, object]:
    return {"conditions": [{"type": kind, "status": status} for kind, status in conditions.items()]}


def test_each_condition_is_a_series_and_leaves_with_the_set() -> None:
    registry = CollectorRegistry()
    metrics = ConditionMetrics(registry)
    deadline = ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED
    metrics.observe(KEY, _status(Available="True", **{c.CONDITION_DEGRADED: "False", deadline: "True"}))
    assert _value(registry, "Available") == 1
    assert _value(registry, c.CONDITION_DEGRADED) == 0
    assert _value(registry, deadline) == 1

    metrics.observe(KEY, _status(Available="Unknown", **{c.CONDITION_DEGRADED: "True"}))
    assert _value(registry, "Available") == 0
    assert _value(registry, c.CONDITION_DEGRADED) == 1
    assert _value(registry, deadline) is None  # no longer in the status: no stale series

    metrics.observe(ObjectKey("ns", "other"), _status(Available="True"))
    metrics.forget(KEY)
    metrics.forget(KEY)  # twice is harmless
    assert _value(registry, "Available") is None
    assert _value(registry, c.CONDITION_DEGRADED) is None
    assert (
        registry.get_sample_value(
            STATUS_CONDITION, {"namespace": "ns", "lws": "other", "condition": "Available"}
        )
        == 1
    )


def test_the_family_is_exposed_before_any_set_is_observed() -> None:
    """An alert on it names a family the scrape carries (HELP and TYPE) even with no series yet."""
    registry = CollectorRegistry()
    ConditionMetrics(registry)
    assert f"# TYPE {STATUS_CONDITION} gauge" in generate_latest(registry).decode()
