"""Every metric the Grafana dashboard (deploy/grafana) and the chart's PrometheusRule
(charts/lws/templates/prometheus/rules.yaml) query is a family a running `lws manager` serves on
/metrics: one scrape of the session's manager, the PromQL of both parsed for metric names
(tests/support/grafana.py), histogram `_bucket/_sum/_count` and counter `_total` mapped to their
family.

Families observed only after an event (a rollout step, a recreation, a Degraded set, a won lease)
count too, without any event here: prometheus_client writes `# HELP`/`# TYPE` for every registered
family before its first sample, and the test checks that it is the `# TYPE` lines that carry them.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.support import grafana
from tests.support.manager import ManagerProcess

pytestmark = [pytest.mark.cluster, pytest.mark.full]


async def test_every_dashboard_and_alert_query_names_a_family_the_manager_serves(
    lws_manager: ManagerProcess,
) -> None:
    if not lws_manager.running:  # a previous test killed it and failed before restarting it
        await lws_manager.start()
    exposition = await asyncio.to_thread(lws_manager.scrape)
    families = grafana.families_in_exposition(exposition)
    exposed = grafana.exposed_names(families)

    dashboard, alerts = grafana.queried_metrics(), grafana.alerted_metrics()
    assert {"lws_status_condition", "leader_election_master_status"} <= alerts
    assert len(grafana.rule_queries()) == 3  # budget spent, rollout stalled, manager not leading
    missing = {
        "dashboard": sorted(dashboard - exposed),
        "alerts": sorted(alerts - exposed),
    }
    assert missing == {"dashboard": [], "alerts": []}, "queried metrics the manager does not serve"

    # The manager runs without leader election and this session may not have rolled a set yet:
    # these families are served by their HELP/TYPE lines, with or without samples.
    for family, kind in (
        ("leader_election_master_status", "gauge"),
        ("lws_status_condition", "gauge"),
        ("lws_rollout_step_duration_seconds", "histogram"),
        ("lws_rollout_min_ready_ratio", "gauge"),
    ):
        assert families.get(family) == kind, family
        assert f"# HELP {family} " in exposition, family


async def test_the_manager_runs_its_heap_trimmer_and_reports_it_on_metrics(
    lws_manager: ManagerProcess,
) -> None:
    """runtime/heap.py's runnable is wired into `lws manager` with the manager's registry: its two
    counters are served, each with its one sample (a counter without labels has one from the start)."""
    if not lws_manager.running:
        await lws_manager.start()
    exposition = await asyncio.to_thread(lws_manager.scrape)
    families = grafana.families_in_exposition(exposition)
    assert {families.get("lws_heap_trims"), families.get("lws_heap_trimmed_bytes")} == {"counter"}
    names = [line.split()[0] for line in exposition.splitlines() if line.startswith("lws_heap_")]
    assert sorted(name for name in names if name.endswith("_total")) == [
        "lws_heap_trimmed_bytes_total",
        "lws_heap_trims_total",
    ]
