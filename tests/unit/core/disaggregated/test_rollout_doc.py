"""docs/disaggregatedset-rollout.md shows a rollout; it must be the one simulate_ds_rollout produces."""

from __future__ import annotations

import re
from pathlib import Path

from leaderworkerset.core.disaggregated.rollout import ChildView, DsRolloutDecision, RoleTarget
from leaderworkerset.core.disaggregated.simulation import simulate_ds_rollout

DOC = Path(__file__).resolve().parents[4] / "docs" / "disaggregatedset-rollout.md"
ROLES = ("prefill", "decode")


def _writes(decision: DsRolloutDecision) -> str:
    if decision.kind == "create":
        return "create " + ", ".join(role for role, _ in decision.create) + " at 0 replicas"
    if decision.kind == "complete":
        return "complete: delete the old LWS"
    parts = []
    for verb, changes in (("down", decision.scale_down), ("up", decision.scale_up)):
        if changes:
            parts.append(verb + " " + ", ".join(f"{c.role} {c.from_replicas}->{c.replicas}" for c in changes))
    return "; ".join(parts)


def _documented_rows() -> list[list[str]]:
    text = DOC.read_text("utf-8")
    block = re.search(r"<!-- rollout-table: [^>]*-->\n```\n(.*?)```\n<!-- /rollout-table -->", text, re.S)
    assert block is not None, "the rollout table markers are missing"
    lines = block.group(1).splitlines()[1:]  # skip the header
    return [re.split(r"\s{2,}|\s\|\s", line.strip(), maxsplit=5) for line in lines]


def test_documented_rollout_is_the_simulated_one() -> None:
    children = [
        ChildView(f"ds-0-old-{role}", role, "old", n, n, n, n, "2026-01-01T00:00:00Z")
        for role, n in zip(ROLES, (4, 2), strict=True)
    ]
    roles = [RoleTarget(role, n, 1, 0, True) for role, n in zip(ROLES, (4, 2), strict=True)]
    old, new = {"prefill": 4, "decode": 2}, {"prefill": 0, "decode": 0}
    rows = []
    for step, decision in enumerate(simulate_ds_rollout("new", roles, children)):
        for change in decision.scale_down:
            old[change.role] = change.replicas
        for change in decision.scale_up:
            new[change.role] = change.replicas
        rows.append(
            [
                str(step),
                str(old["prefill"]),
                str(new["prefill"]),
                str(old["decode"]),
                str(new["decode"]),
                _writes(decision),
            ]
        )
    documented = _documented_rows()
    assert len(documented) == len(rows) == 10
    assert documented == rows
