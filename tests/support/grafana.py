"""The metric names a Grafana dashboard (deploy/grafana) and the chart's PrometheusRule
(charts/lws/templates/prometheus/rules.yaml) query, for the unit check against the manager's
registry and the e2e check against a running manager's /metrics.

prometheus_client writes `# HELP`/`# TYPE` for every registered family, labelled or not, even
before it has a sample: a family only observed after an event (a rollout, a recreation) is in
every scrape all the same, so the scrape check needs no exceptions."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "leaderworkerset-dashboard.json"
RULES = ROOT / "charts" / "lws" / "templates" / "prometheus" / "rules.yaml"
# PromQL words that look like metric names in an expression.
_PROMQL = {
    "sum", "min", "max", "avg", "rate", "increase", "histogram_quantile", "by", "without", "label_values",
    "le", "on", "ignoring", "and", "or", "unless", "count", "absent", "bool",
}  # fmt: skip
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def load() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def queries(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return exprs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rule_queries(text: str | None = None) -> list[str]:
    """Every `expr:` of the PrometheusRule template, with its Helm actions resolved to a placeholder
    (they only ever fill in label values) and its folded (`>-`) continuation lines joined."""
    lines = (text if text is not None else RULES.read_text()).splitlines()
    exprs: list[str] = []
    for number, line in enumerate(lines):
        head, _, rest = line.partition("expr:")
        if not _ or head.strip():
            continue
        if rest.strip() not in (">-", ">", "|", "|-"):
            exprs.append(rest.strip())
            continue
        indent = _indent(line)
        body = itertools.takewhile(lambda x, at=indent: _indent(x) > at, lines[number + 1 :])
        exprs.append(" ".join(part.strip() for part in body))
    return [re.sub(r"\{\{-?[^}]*-?\}\}", "x", expr) for expr in exprs]


def metric_names(expr: str) -> set[str]:
    """Identifiers outside label matchers, grouping clauses and range selectors, minus PromQL words."""
    text = re.sub(r"\{[^}]*\}", " ", expr)
    text = re.sub(r"\b(by|without)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r",\s*[a-zA-Z_]+\)\s*$", ")", text)  # label_values(metric, label)
    return {name for name in _NAME.findall(text) if name not in _PROMQL}


def queried_metrics(dashboard: dict[str, Any] | None = None) -> set[str]:
    return set().union(*(metric_names(q) for q in queries(dashboard or load())))


def alerted_metrics() -> set[str]:
    return set().union(*(metric_names(q) for q in rule_queries()))


def exposed_names(families: dict[str, str]) -> set[str]:
    """Sample names a family exposes, from {family name: type} (counters add _total, histograms
    _bucket/_sum/_count)."""
    names: set[str] = set()
    for name, kind in families.items():
        suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}.get(kind, ("",))
        names.update(name + suffix for suffix in suffixes)
    return names


def families_in_exposition(text: str) -> dict[str, str]:
    """{family: type} from the `# TYPE` lines of a Prometheus text exposition."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            # prometheus_client names a counter family without _total in its TYPE line.
            found[name.removesuffix("_total") if kind == "counter" else name] = kind
    return found
