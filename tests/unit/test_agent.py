"""leaderworkerset.agent: when the sidecar restarts its pod, and that it stays standard-library only."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from leaderworkerset import agent


@dataclass(frozen=True)
class Case:
    baseline: str
    current: str
    want: bool


CASES = [
    pytest.param(Case("", "", False), id="nothing written yet"),
    pytest.param(Case("", "1 other", True), id="first epoch, another pod failed"),
    pytest.param(Case("", "1 me", False), id="first epoch, my own failure"),
    pytest.param(Case("1 other", "1 other", False), id="unchanged"),
    pytest.param(Case("1 other", "2 me", False), id="my pod started it: restarted already"),
    pytest.param(Case("2 me", "3 other", True), id="after my own epoch, another's"),
    pytest.param(Case("1 other", "", False), id="annotation removed"),
    pytest.param(Case("1 other", "2", True), id="no origin named"),
]


def test_table_size() -> None:
    assert len(CASES) == 8


@pytest.mark.parametrize("case", CASES)
def test_should_restart(case: Case) -> None:
    assert agent.should_restart(case.baseline, case.current, "me") is case.want


def test_watch_adopts_its_own_epoch_then_exits_on_another() -> None:
    values = iter(["", "", "1 me", "1 me", "2 other"])
    slept: list[float] = []
    code = agent.watch("f", "me", read=lambda _: next(values), sleep=slept.append)
    assert code == agent.EXIT_RESTART
    assert len(slept) == 3


def test_read_epoch(tmp_path: Path) -> None:
    assert agent.read_epoch(str(tmp_path / "missing")) == ""
    (tmp_path / "epoch").write_text("3 w-0\n")
    assert agent.read_epoch(str(tmp_path / "epoch")) == "3 w-0"


def test_the_agent_loads_nothing_but_the_standard_library() -> None:
    probe = (
        "import sys, leaderworkerset.agent; "
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('msgspec', 'structlog', 'aiohttp') "
        "or (m.startswith('leaderworkerset.') and m != 'leaderworkerset.agent')); print(mods)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_usage_without_a_file() -> None:
    assert agent.main([]) == 2
