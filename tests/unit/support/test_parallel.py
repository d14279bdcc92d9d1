"""The suite's xdist scheduling (tests/support/parallel.py), run for real: a small suite under
`-n 2 --dist loadgroup` with the hooks of tests/conftest.py, each test noting its worker and times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import parallel

REPO = Path(__file__).resolve().parents[3]

CONFTEST = """
from tests.support.parallel import pytest_collection_modifyitems, pytest_xdist_make_scheduler  # noqa: F401
"""
NOTE = """
import json, os, time
import pytest

def note(name):
    started = time.monotonic()
    time.sleep(0.2)  # the test's work: long enough that a wrong schedule overlaps visibly
    with open(os.environ["NOTES"], "a") as out:
        out.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"], started, time.monotonic()]) + "\\n")
"""
INI = "[pytest]\nmarkers =\n    alone(reason): see tests/support/parallel.py\n"
SUITE = {
    "tests/e2e/test_module.py": "@pytest.mark.parametrize('i', range(4))\ndef test_mod(i): note('module')\n",
    "tests/e2e/test_group_a.py": "@pytest.mark.xdist_group('g')\ndef test_a(): note('group')\n",
    "tests/e2e/test_group_b.py": "pytestmark = pytest.mark.xdist_group('g')\ndef test_b(): note('group')\n",
    "tests/e2e/test_alone.py": (
        "@pytest.mark.alone('it needs the machine')\n@pytest.mark.parametrize('i', range(2))\n"
        "def test_alone(i): note('alone')\n"
    ),
    "tests/unit/test_units.py": "@pytest.mark.parametrize('i', range(6))\ndef test_unit(i): note('unit')\n",
}


def run_suite(root: Path, suite: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    (root / "conftest.py").write_text(CONFTEST)
    (root / "note.py").write_text(NOTE)
    for path, body in suite.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"import pytest\nfrom note import note\n\n{body}")
    (root / "pytest.ini").write_text(INI)
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{root}", NOTES=str(root / "notes.jsonl"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_units_stay_on_one_worker_and_alone_tests_run_after_all_others(tmp_path: Path) -> None:
    proc = run_suite(tmp_path, SUITE, "-n", "2", "--dist", "loadgroup")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    notes = [json.loads(line) for line in (tmp_path / "notes.jsonl").read_text().splitlines()]
    assert len(notes) == 4 + 1 + 1 + 2 + 6

    def workers(name: str) -> set[str]:
        return {worker for kind, worker, _, _ in notes if kind == name}

    assert len(workers("module")) == 1, notes
    assert len(workers("group")) == 1, notes
    assert len(workers("alone")) == 1, notes
    first_alone = min(start for kind, _, start, _ in notes if kind == "alone")
    last_other = max(end for kind, _, _, end in notes if kind != "alone")
    assert first_alone >= last_other, notes


def test_an_alone_mark_without_a_reason_is_refused(tmp_path: Path) -> None:
    proc = run_suite(
        tmp_path, {"tests/e2e/test_alone.py": "@pytest.mark.alone\ndef test_alone(): note('alone')\n"}
    )
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "alone(reason) needs the reason" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("nodeid", "unit"),
    [
        ("tests/unit/core/test_x.py::test_a[1]", "tests/unit/core/test_x.py"),
        ("tests/e2e/test_plan.py::test_a[1]", "tests/e2e/test_plan.py"),
        ("tests/e2e/test_plan.py::Test::test_a", "tests/e2e/test_plan.py"),
        ("tests/e2e/ecosystem/test_kueue.py::test_a@kueue", "kueue"),
        ("tests/e2e/test_benchmarks_smoke.py::test_a@alone", "alone"),
        ("tests/e2e/test_plan.py::test_a[x@y]", "tests/e2e/test_plan.py"),
    ],
)
def test_the_unit_of_a_test(nodeid: str, unit: str) -> None:
    assert parallel.unit_of(nodeid) == unit
