"""CI smoke run of the side-by-side benchmark: every scenario completes for both controllers.

`python -m benchmarks.sidebyside --size smoke` starts its own full cluster (the harness is a user
command; it does not borrow the test session's cluster), runs ours and upstream's v0.9.0 manager in
turn, and writes its JSON; `benchmarks.plots` draws the report's PNGs from it. Nothing here looks at
how fast anything was: only that each scenario reached its goal, that the apiserver's audit log
attributed requests to each controller's identity, and that the report data and plots exist.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import plots
from benchmarks.sidebyside import __main__ as harness
from benchmarks.sidebyside.scenarios import FLOORS, MEMORY, SCENARIOS

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.full,
    # every scenario twice (ours and upstream's controller), each on a fresh manager: ~3.5 min warm
    pytest.mark.timeout(900),
]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_every_scenario_completes_for_both_controllers_and_the_report_is_drawn(tmp_path: Path) -> None:
    out = harness.main(["--size", "smoke", "--results", str(tmp_path / "results")])
    document = json.loads(out.read_text())
    records = document["records"]

    failed = [f"{r['scenario']}/{r['controller']}: {r.get('error')}" for r in records if not r["ok"]]
    assert not failed, "\n".join(failed)
    ran = {(r["scenario"], r["controller"]) for r in records}
    phases = [p for s in (*SCENARIOS, MEMORY) for p in (s, *s.then)]
    want = {(p.name, who) for p in phases for who in ("ours", "upstream")}
    want |= {(s.name, "floor") for s in FLOORS}
    assert ran == want
    assert len(records) == len(want)  # smoke size: one repeat

    # The audit log saw each controller's own identity create the large LWS's StatefulSets.
    for who in ("ours", "upstream"):
        (large,) = [r for r in records if r["scenario"] == "large" and r["controller"] == who]
        assert large["requests"].get("create statefulsets", 0) >= 1, large["requests"]
        assert large["peak_rss_mib"] > 0, large
    assert set(document["summary"]["large"]["ratio"]) >= {"seconds", "requests_total"}

    pictures = plots.main([str(out), "--out", str(tmp_path / "plots")])
    assert len(pictures) == 4
    for picture in pictures:
        assert picture.read_bytes()[:8] == PNG_MAGIC, picture
