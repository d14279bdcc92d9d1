"""core/lifecycle: a ready group's phase durations from its pods' timestamps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.core.observe.readiness import (
    PHASE_READY,
    PHASE_SCHEDULED,
    PHASE_STARTED,
    PHASE_TOTAL,
    group_milestones,
    ready_before,
)
from tests.support.builders import pod

Obj = dict[str, Any]


def _at(second: int) -> str:
    return f"2026-12-01T13:00:{second:02d}Z"


def _pod(
    name: str, created: int, scheduled: int, started: int | None, ready: int | None, *, rev: str = "r"
) -> Obj:
    builder = (
        pod(name).lws_name("lws").group_index("0").revision(rev).created(_at(created))
        .condition("PodScheduled", at=_at(scheduled))
    )  # fmt: skip
    if ready is not None:
        builder = builder.condition("Ready", at=_at(ready))
    else:
        builder = builder.condition("Ready", "False", at=_at(scheduled))
    running = {"running": {"startedAt": _at(started)}} if started is not None else None
    return builder.container_status("c", state=running, ready=ready is not None).obj()


def _phases(scheduled: float, started: float, ready: float, total: float) -> dict[str, float]:
    return {PHASE_SCHEDULED: scheduled, PHASE_STARTED: started, PHASE_READY: ready, PHASE_TOTAL: total}


@dataclass(frozen=True)
class Case:
    pods: list[Obj]
    size: int
    want: dict[str, float] | None


CASES = [
    pytest.param(
        Case([_pod("lws-0", 0, 2, 5, 9), _pod("lws-0-1", 1, 3, 6, 12)], 2,
             _phases(3, 3, 6, 12)),
        id="two pods: first created to last scheduled, started, ready",
    ),
    pytest.param(
        Case([_pod("lws-0", 0, 2, None, 4)], 1, _phases(2, 0, 2, 4)),
        id="no container start time: the phase collapses",
    ),
    pytest.param(
        Case([_pod("lws-0", 5, 4, 3, 6)], 1, _phases(0, 0, 1, 1)),
        id="coarse clocks out of order: no negative phase",
    ),
    pytest.param(Case([_pod("lws-0", 0, 2, 5, None)], 1, None), id="a pod not ready: not yet"),
    pytest.param(Case([_pod("lws-0", 0, 2, 5, 9)], 2, None), id="a pod missing: not yet"),
    pytest.param(
        Case([_pod("lws-0", 0, 2, 5, 9), _pod("lws-0-1", 0, 2, 5, 9, rev="old")], 2, None),
        id="a pod of another revision does not count",
    ),
]  # fmt: skip


def test_table_size() -> None:
    assert len(CASES) == 6


@pytest.mark.parametrize("case", CASES)
def test_group_milestones(case: Case) -> None:
    milestones = group_milestones(case.pods[0], case.pods, case.size)
    assert (None if milestones is None else milestones.durations()) == case.want


@pytest.mark.parametrize(
    ("ready", "started", "before"),
    [
        (99.0, 100.5, True),  # a whole second earlier
        (100.0, 100.5, False),  # stamped in the start's second: maybe after it
        (100.0, 100.0, False),
        (101.0, 100.5, False),
    ],
)
def test_ready_before_a_start_counts_whole_seconds(ready: float, started: float, before: bool) -> None:
    assert ready_before(ready, started) is before
