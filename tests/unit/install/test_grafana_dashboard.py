"""deploy/grafana and the chart's PrometheusRule: every metric the dashboard and the alerts query
is one the lws manager registers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.webhooks.metrics import new_webhook_metrics
from tests.support import grafana
from tests.support.inprocess import in_process_manager


@pytest.fixture
def manager_registry(tmp_path: Path) -> Any:
    """The registry of a manager with every controller and the webhook metrics registered, as
    `lws manager` builds it (nothing is started: no cluster is needed)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
            "users": [{"name": "x", "user": {"token": "t"}}],
            "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        })
    )  # fmt: skip
    manager, _ = in_process_manager(new_client(ClientOptions(kubeconfig=str(kubeconfig))))
    new_webhook_metrics(manager.registry)
    return manager.registry


def test_metric_names_are_read_from_promql() -> None:
    expr = 'histogram_quantile(0.9, sum by (le, phase) (rate(a_b_bucket{x=~"$y",z="w"}[5m]))) / max(c)'
    assert grafana.metric_names(expr) == {"a_b_bucket", "c"}
    assert grafana.metric_names('label_values(lws_group_recreations_total{namespace=~"$ns"}, lws)') == {
        "lws_group_recreations_total"
    }


def test_rule_expressions_are_read_from_the_template() -> None:
    template = """
        - alert: A
          expr: max by (namespace) (a_metric{condition="X"}) == 1
          for: 1m
        - alert: B
          expr: >-
            max(b_metric{ {{- $selector -}} }) < 1
            or absent(b_metric{ {{- $selector -}} })
          for: 5m
    """
    exprs = grafana.rule_queries(template)
    assert exprs == [
        'max by (namespace) (a_metric{condition="X"}) == 1',
        "max(b_metric{ x }) < 1 or absent(b_metric{ x })",
    ]
    assert set().union(*map(grafana.metric_names, exprs)) == {"a_metric", "b_metric"}


def test_every_alert_metric_is_registered_by_the_manager(manager_registry: Any) -> None:
    registered = grafana.exposed_names({family.name: family.type for family in manager_registry.collect()})
    alerted = grafana.alerted_metrics()
    assert alerted == {"lws_status_condition", "leader_election_master_status"}
    assert not alerted - registered, "the PrometheusRule queries metrics nobody registers"


def test_every_dashboard_metric_is_registered_by_the_manager(manager_registry: Any) -> None:
    queried = grafana.queried_metrics()
    registered = grafana.exposed_names({family.name: family.type for family in manager_registry.collect()})
    assert not queried - registered, "the dashboard queries metrics nobody registers"
    # The panels the issue asks for are all there.
    for name in (
        "lws_group_recreations_total",
        "lws_group_time_to_ready_seconds_bucket",
        "lws_rollout_step_duration_seconds_bucket",
        "lws_rollout_min_ready_ratio",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
    ):
        assert name in queried, name
    dashboard = grafana.load()
    assert len(dashboard["panels"]) == 17
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
