"""The drain-timeline plot (docs/disruption-budgets.md) from the e2e test's recorded timelines."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import drain_timeline


def test_one_panel_per_recorded_drain(tmp_path: Path) -> None:
    runs = [
        {"title": "ours", "completed": True, "points": [[0.0, 6], [2.5, 7], [5.0, 6]]},
        {"title": "upstream + plain PDB", "completed": False, "points": [[0.0, 6], [0.4, 4]]},
    ]
    data = tmp_path / "timelines.jsonl"
    data.write_text("".join(json.dumps(run) + "\n" for run in runs))
    out = drain_timeline.main([str(data), "--out", str(tmp_path / "drain.svg")])
    svg = out.read_text()
    assert svg.startswith("<?xml"), svg[:80]
    assert "ours: fewest 6" in svg
    assert "fewest 4, drains did not complete" in svg
    assert drain_timeline.load(data) == runs
