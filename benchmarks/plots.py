"""Plots for docs/benchmarks.md from side-by-side result files (benchmarks/sidebyside).

    uv run python -m benchmarks.plots RESULTS.json [MORE.json ...] [--out docs/benchmarks]

A later file's records of a scenario (or memory level) at a size replace the earlier files' records of it.

Writes four PNGs: time to Available against groups (one large LWS per size, plus the memory levels'
LWS, with the no-controller floor), peak RSS against cluster pods (idle and memory levels), controller
CPU-seconds per 1,000 groups and API requests per group, per scenario. Medians over repeats; the
error bars span min to max.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLOURS = {"ours": "tab:blue", "upstream": "tab:orange", "floor": "tab:gray"}
PER_GROUP = ("large", "many", "rolling", "recreate", "scale_up", "scale_down", "stall", "ds_rollout")


def measured(record: dict[str, Any]) -> tuple[str, str, Any]:
    """What a record measured: its size's scenario, and for the memory scenario its level."""
    return record["size"], record["scenario"], record.get("cluster_pods")


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """The files' records; where a later file measured a scenario (a memory level) again, its records
    replace the earlier files', so a rerun of some scenarios updates the plots without mixing runs."""
    records: list[dict[str, Any]] = []
    for path in paths:
        document = json.loads(path.read_text())
        fresh = [r | {"size": document["size"]["name"]} for r in document["records"] if r.get("ok")]
        again = {measured(r) for r in fresh}
        records = [r for r in records if measured(r) not in again] + fresh
    return records


def series(points: dict[float, list[float]]) -> tuple[list[float], list[float], list[list[float]]]:
    xs = sorted(points)
    medians = [statistics.median(points[x]) for x in xs]
    errors = [
        [m - min(points[x]) for x, m in zip(xs, medians, strict=True)],
        [max(points[x]) - m for x, m in zip(xs, medians, strict=True)],
    ]
    return xs, medians, errors


def line_plot(records: list[dict[str, Any]], x_of: Any, y_key: str, title: str, xlabel: str, ylabel: str,
              out: Path) -> None:  # fmt: skip
    by_who: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        x = x_of(record)
        if x is not None and y_key in record:
            by_who[record["controller"]][x].append(float(record[y_key]))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for who, points in sorted(by_who.items()):
        xs, ys, errors = series(points)
        ax.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=who, color=COLOURS.get(who))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def bar_plot(records: list[dict[str, Any]], value: Any, title: str, ylabel: str, out: Path) -> None:
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in records:
        if record["scenario"] in PER_GROUP and record["controller"] in ("ours", "upstream"):
            v = value(record)
            if v is not None:
                values[(record["scenario"], record["controller"])].append(v)
    scenarios = [s for s in PER_GROUP if any(k[0] == s for k in values)]
    fig, ax = plt.subplots(figsize=(7.5, 4.0))
    width = 0.38
    for offset, who in ((-width / 2, "ours"), (width / 2, "upstream")):
        heights = [statistics.median(values[(s, who)]) if values[(s, who)] else 0 for s in scenarios]
        ax.bar([i + offset for i in range(len(scenarios))], heights, width, label=who, color=COLOURS[who])
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=20)
    ax.set(title=title, ylabel=ylabel)
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def groups_of(record: dict[str, Any]) -> float | None:
    if record["scenario"] == "large":
        return float(record["groups"])
    if record["scenario"] == "memory":
        return float(record["mem_groups"])
    return None


def pods_of(record: dict[str, Any]) -> float | None:
    if record["scenario"] == "memory":
        return float(record["cluster_pods"])
    if record["scenario"] == "idle":
        return 0.0
    # Not idle_after_load: its pods are gone, and at the x of `large`'s pods it would blend with
    # the memory level of the same count into one median.
    return None


def per_group(key: str, scale: float) -> Any:
    def value(record: dict[str, Any]) -> float | None:
        if key not in record or not record.get("groups"):
            return None
        return float(record[key]) / record["groups"] * scale

    return value


# (target, rows, metric, bound): the targets, as ratios of ours over upstream's medians.
# MEMORY_LEVELS stands for every memory level the summary has (rows "memory <cluster pods>").
MEMORY_LEVELS = "memory levels"
TARGETS = (
    (
        "time to Available",
        ("large", "many", "recreate", "scale_up", "scale_down", "ds_rollout", MEMORY_LEVELS),
        "seconds",
        1.0,
    ),
    ("rolling update time", ("rolling", "stall"), "seconds", 1.0),
    ("API requests", (*PER_GROUP, MEMORY_LEVELS), "requests_total", 1.0),
    ("CPU-seconds", (*PER_GROUP, MEMORY_LEVELS), "cpu_seconds", 1.0),
    ("peak RSS", ("idle", "large", MEMORY_LEVELS), "peak_rss_mib", 1.0),
    ("peak RSS at 10,000 cluster pods", ("memory 10000",), "peak_rss_mib", 0.5),
)


def expand(rows: tuple[str, ...], summary: dict[str, Any]) -> list[str]:
    levels = sorted((r for r in summary if r.startswith("memory ")), key=lambda r: int(r.split()[1]))
    return [name for r in rows for name in (levels if r == MEMORY_LEVELS else [r])]


def targets_markdown(summary: dict[str, Any]) -> str:
    """One row per target and summary row: ours / upstream, the bound, and by how much it is missed."""
    lines = ["| target | scenario | ours / upstream | bound | verdict |", "|---|---|---|---|---|"]
    for target, rows, metric, bound in TARGETS:
        for name in expand(rows, summary):
            ratio = (summary.get(name) or {}).get("ratio", {}).get(metric)
            if ratio is None:
                continue
            verdict = "met" if ratio <= bound else f"missed by {(ratio / bound - 1) * 100:.0f} %"
            lines.append(f"| {target} | {name} | {ratio:.2f} | ≤ {bound:.1f} | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--targets", action="store_true", help="also print the targets table per file")
    args = parser.parse_args(argv)
    records = load(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    names = ("time-to-available.png", "rss-vs-pods.png", "cpu-per-1000-groups.png", "requests-per-group.png")
    outputs = [args.out / name for name in names]
    line_plot(records, groups_of, "seconds", "Create → Available, one LWS of G groups x 4 pods", "groups",
              "seconds (median, min-max)", outputs[0])  # fmt: skip
    line_plot(records, pods_of, "peak_rss_mib", "Controller peak RSS against pods in the cluster",
              "cluster pods", "RSS MiB", outputs[1])  # fmt: skip
    bar_plot(records, per_group("cpu_seconds", 1000.0), "Controller CPU per 1,000 groups", "CPU-seconds",
             outputs[2])  # fmt: skip
    bar_plot(records, per_group("requests_total", 1.0), "API requests per group (apiserver audit log)",
             "requests", outputs[3])  # fmt: skip
    for path in outputs:
        print(path)
    if args.targets:
        for path in args.results:
            print(f"\n{path.name}:\n" + targets_markdown(json.loads(path.read_text())["summary"]))
    return outputs


if __name__ == "__main__":
    main()
