"""The picture in docs/disruption-budgets.md: Ready groups over time while 2 of 6 nodes are drained,
one panel per run, from the timelines tests/e2e/test_disruption_budget.py records.

    LWS_DRAIN_TIMELINES=docs/benchmarks/drain-timelines.jsonl \
        ./hack/bootstrap.sh run pytest tests/e2e/test_disruption_budget.py -s
    uv run python -m benchmarks.drain_timeline docs/benchmarks/drain-timelines.jsonl \
        [--out docs/benchmarks/drain-timeline.svg]

Each line of the input is one drain: its title, whether both drains completed, and the points
(seconds since the drains began, Ready groups) at every change the e2e test's watch saw.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.plots import COLOURS, plt

REPLICAS = 6


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _colour(title: str) -> str:
    return COLOURS["upstream"] if title.startswith("upstream") else COLOURS["ours"]


def plot(runs: list[dict[str, Any]], out: Path) -> Path:
    plt.rcParams["svg.hashsalt"] = (
        "drain-timeline"  # stable ids: the committed file only changes with the data
    )
    fig, axes = plt.subplots(len(runs), 1, figsize=(7.5, 1.35 * len(runs) + 0.6), sharex=True, squeeze=False)
    for ax, run in zip(axes[:, 0], runs, strict=True):
        times = [at for at, _ in run["points"]]
        times.append(times[-1] + 1.0)  # the last state, up to when the watch ended
        ready = [count for _, count in run["points"]]
        ready.append(ready[-1])
        ax.step(times, ready, where="post", color=_colour(run["title"]), linewidth=1.6)
        ax.axhline(REPLICAS, color=COLOURS["floor"], linewidth=0.8, linestyle=":")
        floor = min(ready)
        note = f"fewest {floor}" + ("" if run["completed"] else ", drains did not complete")
        ax.set_title(f"{run['title']}: {note}", fontsize=8.5, loc="left")
        ax.set_ylim(REPLICAS - 3.5, REPLICAS + 1.5)
        ax.set_yticks(range(REPLICAS - 3, REPLICAS + 2))
        ax.tick_params(labelsize=7.5)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since both drains began")
    fig.supylabel("Ready groups (spec.replicas 6, dotted)", fontsize=8.5)
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timelines", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/drain-timeline.svg"))
    args = parser.parse_args(argv)
    path = plot(load(args.timelines), args.out)
    print(path)
    return path


if __name__ == "__main__":
    main()
