"""Prometheus metrics under controller-runtime's names, registered on an injectable registry.

Dashboards and alerts written for Go operators (and upstream lws) keep working because the metric
names and label sets match controller-runtime's: `workqueue_*{name,controller}` and
`controller_runtime_*{controller}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# client-go's workqueue buckets: 10 ns .. ~1000 s in decades.
_QUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(12))
# controller-runtime's reconcile_time_seconds buckets.
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
)  # fmt: skip

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_REQUEUE = "requeue"
RESULT_REQUEUE_AFTER = "requeue_after"


@dataclass(frozen=True)
class WorkQueueMetrics:
    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    retries: Counter
    unfinished_work: Gauge
    longest_running: Gauge


@dataclass(frozen=True)
class ReconcileMetrics:
    total: Counter
    errors: Counter
    time: Histogram
    max_concurrent: Gauge
    active_workers: Gauge


@dataclass(frozen=True)
class RuntimeMetrics:
    """Every runtime metric family, registered once per registry."""

    registry: CollectorRegistry
    workqueue: WorkQueueMetrics
    reconcile: ReconcileMetrics
    leader_election_master_status: Gauge
    rest_client_requests: Counter


def _workqueue_metrics(registry: CollectorRegistry) -> WorkQueueMetrics:
    labels = ("name", "controller")
    return WorkQueueMetrics(
        depth=Gauge("workqueue_depth", "Current depth of workqueue", labels, registry=registry),
        adds=Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", labels, registry=registry
        ),
        queue_duration=Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            buckets=_QUEUE_BUCKETS,
            registry=registry,
        ),
        work_duration=Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            buckets=_QUEUE_BUCKETS,
            registry=registry,
        ),
        retries=Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", labels, registry=registry
        ),
        unfinished_work=Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            labels,
            registry=registry,
        ),
        longest_running=Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            registry=registry,
        ),
    )


def _reconcile_metrics(registry: CollectorRegistry) -> ReconcileMetrics:
    return ReconcileMetrics(
        total=Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        ),
        errors=Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        ),
        time=Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            buckets=_RECONCILE_BUCKETS,
            registry=registry,
        ),
        max_concurrent=Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ("controller",),
            registry=registry,
        ),
        active_workers=Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ("controller",),
            registry=registry,
        ),
    )


def new_runtime_metrics(registry: CollectorRegistry | None = None) -> RuntimeMetrics:
    """Register all families on `registry` (a fresh private one by default, so tests never collide)."""
    reg = registry if registry is not None else CollectorRegistry()
    return RuntimeMetrics(
        registry=reg,
        workqueue=_workqueue_metrics(reg),
        reconcile=_reconcile_metrics(reg),
        leader_election_master_status=Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 master.",
            ("name",),
            registry=reg,
        ),
        rest_client_requests=Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
            registry=reg,
        ),
    )
