"""Medians with their spread per scenario and controller, and ratios of ours against upstream."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

METRICS = ("seconds", "cpu_seconds", "peak_rss_mib", "end_rss_mib", "requests_total")


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        grouped[(record["scenario"], record["controller"])].append(record)
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
        entry["load"] = spread([float(r["load_before"]) for r in runs])
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


def _cell(entry: dict[str, Any] | None, metric: str, fmt: str) -> str:
    if not entry or metric not in entry:
        return "—"
    s = entry[metric]
    body = format(s["median"], fmt)
    return body if s["n"] == 1 else f"{body} ({format(s['min'], fmt)}-{format(s['max'], fmt)})"


def markdown(table: dict[str, Any]) -> str:
    lines = [
        "| scenario | controller | time s | CPU s | peak RSS MiB | end RSS MiB | API requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for scenario, entries in table.items():
        for who in ("ours", "upstream", "floor"):
            entry = entries.get(who)
            if not entry:
                continue
            failed = f" ({entry['failed']} failed)" if entry["failed"] else ""
            lines.append(
                f"| {scenario} | {who}{failed} | {_cell(entry, 'seconds', '.1f')} | "
                f"{_cell(entry, 'cpu_seconds', '.1f')} | {_cell(entry, 'peak_rss_mib', '.0f')} | "
                f"{_cell(entry, 'end_rss_mib', '.0f')} | {_cell(entry, 'requests_total', '.0f')} |"
            )
        ratio = entries.get("ratio")
        if ratio:
            cells = [f"{ratio[m]:.2f}x" if m in ratio else "—" for m in METRICS]
            lines.append(f"| {scenario} | **ours / upstream** | " + " | ".join(cells) + " |")
    return "\n".join(lines)
