"""Medians with their spread per scenario and controller, and ratios of ours against upstream."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

METRICS = ("seconds", "cpu_seconds", "peak_rss_mib", "end_rss_mib", "requests_total")


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def row(record: dict[str, Any]) -> str:
    """The summary row a record counts in: its scenario, and for the memory scenario its level too,
    since the issue's targets are per level (a median across levels would mean nothing)."""
    if record["scenario"] == "memory" and "cluster_pods" in record:
        return f"memory {record['cluster_pods']}"
    return str(record["scenario"])


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[(row(record), record["controller"])].append(record)
    table: dict[str, dict[str, Any]] = defaultdict(dict)
    for (scenario, who), runs in grouped.items():
        ok = [r for r in runs if r.get("ok")]
        entry: dict[str, Any] = {
            "runs": len(runs),
            "failed": len(runs) - len(ok),
            "groups": runs[0]["groups"],
        }
        for metric in METRICS:
            values = [float(r[metric]) for r in ok if metric in r]
            if values:
                entry[metric] = spread(values)
        extras = {k for r in ok for k, v in r.items() if k not in METRICS and isinstance(v, int | float)}
        for key in extras - {"repeat", "groups", "load_before", "load_after"}:
            values = [float(r[key]) for r in ok if key in r]
            entry[key] = spread(values)
        # Records rebuilt from a run's log (`from_log`) carry no load.
        if loads := [float(r["load_before"]) for r in runs if "load_before" in r]:
            entry["load"] = spread(loads)
        table[scenario][who] = entry
    for entries in table.values():
        ours, upstream = entries.get("ours"), entries.get("upstream")
        if ours and upstream:
            ratios = {}
            for metric in METRICS:
                if metric in ours and metric in upstream and upstream[metric]["median"]:
                    ratios[metric] = ours[metric]["median"] / upstream[metric]["median"]
            entries["ratio"] = ratios
    return dict(table)


RECONCILES = ("reconciles_leaderworkerset", "reconciles_pod")


def _cell(entry: dict[str, Any] | None, metric: str, fmt: str) -> str:
    if not entry or metric not in entry:
        return "—"
    s = entry[metric]
    body = format(s["median"], fmt)
    return body if s["n"] == 1 else f"{body} ({format(s['min'], fmt)}-{format(s['max'], fmt)})"


def _ratio(ours: dict[str, Any], upstream: dict[str, Any], metric: str) -> str:
    if metric not in ours or metric not in upstream or not upstream[metric]["median"]:
        return "—"
    return f"{ours[metric]['median'] / upstream[metric]['median']:.2f}x"


def markdown(table: dict[str, Any]) -> str:
    """Medians (min-max) per scenario and controller, then the ratios: the report's table."""
    lines = [
        "| scenario | controller | time s | CPU s | peak RSS MiB | end RSS MiB | API requests "
        "| LWS / pod reconciles |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario, entries in table.items():
        for who in ("ours", "upstream", "floor"):
            entry = entries.get(who)
            if not entry:
                continue
            failed = f" ({entry['failed']} failed)" if entry["failed"] else ""
            reconciles = " / ".join(_cell(entry, m, ",.0f") for m in RECONCILES)
            lines.append(
                f"| {scenario} | {who}{failed} | {_cell(entry, 'seconds', '.1f')} | "
                f"{_cell(entry, 'cpu_seconds', '.1f')} | {_cell(entry, 'peak_rss_mib', '.0f')} | "
                f"{_cell(entry, 'end_rss_mib', '.0f')} | {_cell(entry, 'requests_total', ',.0f')} | "
                f"{reconciles} |"
            )
        ratio = entries.get("ratio")
        if ratio:
            cells = [f"{ratio[m]:.2f}x" if m in ratio else "—" for m in METRICS]
            reconciles = " / ".join(_ratio(entries["ours"], entries["upstream"], m) for m in RECONCILES)
            lines.append(f"| {scenario} | **ours / upstream** | " + " | ".join(cells) + f" | {reconciles} |")
    return "\n".join(lines)
