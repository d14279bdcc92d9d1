"""Group lifecycle metrics of the pod controller, registered on the manager's registry.

* `lws_group_recreations_total{namespace,lws,cause}`: recreations that actually happened (a
  back-off wait or an exhausted budget is not one), by the failure ledger's cause;
* `lws_group_time_to_ready_seconds{namespace,lws,phase}`: per group incarnation, how long each
  phase took (core/observe/readiness.py: scheduled, containers-started, ready, and the total).

Like the runtime metrics, the registry is injected: each manager (and each test) has its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

RECREATIONS = "lws_group_recreations"  # exposed as lws_group_recreations_total
TIME_TO_READY = "lws_group_time_to_ready_seconds"
# From a second (a size-1 group on an idle cluster) to an hour (a large group waiting for capacity).
TIME_TO_READY_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600)


@dataclass(frozen=True)
class GroupMetrics:
    recreations: Counter
    time_to_ready: Histogram


def new_group_metrics(registry: CollectorRegistry | None = None) -> GroupMetrics:
    reg = registry if registry is not None else CollectorRegistry()
    return GroupMetrics(
        recreations=Counter(
            RECREATIONS,
            "Group recreations carried out by the pod controller, by failure cause",
            ("namespace", "lws", "cause"),
            registry=reg,
        ),
        time_to_ready=Histogram(
            TIME_TO_READY,
            "Time a group incarnation spent in each phase until ready: created to scheduled, "
            "scheduled to containers started, started to ready, and the total",
            ("namespace", "lws", "phase"),
            buckets=TIME_TO_READY_BUCKETS,
            registry=reg,
        ),
    )
