"""deploy/grafana: every metric the dashboard queries is one the lws manager registers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.controllers.setup import register_controllers
from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.webhooks.metrics import new_webhook_metrics
from tests.support.manager import in_process_options

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "deploy" / "grafana" / "leaderworkerset-dashboard.json"
# Helper `rollout` (issue 13 item 5) registers these; until that branch lands they are expected by
# name. Once it has, delete this set: the test then checks them against the registry like the rest.
EXPECTED_ROLLOUT = {
    "lws_rollout_step_duration_seconds_bucket",
    "lws_rollout_min_ready_ratio",
}
# PromQL words that look like metric names in an expression.
_PROMQL = {
    "sum", "min", "max", "avg", "rate", "increase", "histogram_quantile", "by", "without", "label_values",
    "le", "on", "ignoring", "and", "or", "unless", "count",
}  # fmt: skip
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _queries(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return exprs


def metric_names(expr: str) -> set[str]:
    """Identifiers outside label matchers, grouping clauses and strings, minus PromQL words."""
    text = re.sub(r"\{[^}]*\}", " ", expr)  # label matchers
    text = re.sub(r"\b(by|without)\s*\([^)]*\)", " ", text)  # grouping labels
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range durations
    text = re.sub(r",\s*[a-zA-Z_]+\)\s*$", ")", text)  # label_values(metric, label)
    return {name for name in _NAME.findall(text) if name not in _PROMQL}


def exposed_names(registry: Any) -> set[str]:
    names: set[str] = set()
    for family in registry.collect():
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}.get(
            family.type, ("",)
        )
        names.update(family.name + suffix for suffix in suffixes)
    return names


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
    manager = Manager(new_client(ClientOptions(kubeconfig=str(kubeconfig))), in_process_options())
    register_controllers(manager)
    new_webhook_metrics(manager.registry)
    return manager.registry


def test_metric_names_are_read_from_promql() -> None:
    expr = 'histogram_quantile(0.9, sum by (le, phase) (rate(a_b_bucket{x=~"$y",z="w"}[5m]))) / max(c)'
    assert metric_names(expr) == {"a_b_bucket", "c"}
    assert metric_names('label_values(lws_group_recreations_total{namespace=~"$ns"}, lws)') == {
        "lws_group_recreations_total"
    }


def test_every_dashboard_metric_is_registered_by_the_manager(manager_registry: Any) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queried = set().union(*(metric_names(q) for q in _queries(dashboard)))
    registered = exposed_names(manager_registry)
    assert not queried - registered - EXPECTED_ROLLOUT, "the dashboard queries metrics nobody registers"
    # The panels the issue asks for are all there.
    for name in (
        "lws_group_recreations_total",
        "lws_group_time_to_ready_seconds_bucket",
        *EXPECTED_ROLLOUT,
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
    ):
        assert name in queried, name
    assert len(dashboard["panels"]) == 17
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
