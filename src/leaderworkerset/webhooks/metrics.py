"""Webhook metrics under controller-runtime's names (`controller_runtime_webhook_*{webhook}`), so
dashboards built for Go operators read our server too. The `webhook` label is the request path."""

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass(frozen=True)
class WebhookMetrics:
    latency: Histogram
    requests: Counter
    in_flight: Gauge


def new_webhook_metrics(registry: CollectorRegistry | None = None) -> WebhookMetrics:
    """Register the families on `registry` (a private one by default, so tests never collide)."""
    reg = registry if registry is not None else CollectorRegistry()
    return WebhookMetrics(
        latency=Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ("webhook",),
            registry=reg,
        ),
        requests=Counter(
            "controller_runtime_webhook_requests_total",
            "Total number of admission requests by HTTP status code.",
            ("webhook", "code"),
            registry=reg,
        ),
        in_flight=Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ("webhook",),
            registry=reg,
        ),
    )
