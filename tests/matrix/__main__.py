"""The version matrix: the journeys, the lifecycle, the swap with upstream's controller, the chaos kill
test and the version-dependent behaviour, on every supported Kubernetes version, then the control-plane
upgrade through the window; prints a table version x suite (passed/failed/skipped, duration).

    make matrix                                   # every version, every suite, then the upgrade
    uv run python -m tests.matrix --versions 1.34,1.36 --suites journeys
    uv run python -m tests.matrix --write docs/compatibility.md

Each cell is one pytest run with LWS_KUBERNETES_VERSION set, so it is exactly what
`LWS_KUBERNETES_VERSION=1.34 uv run pytest <paths>` gives; a version's control plane is built first
(once, cached). `--write` replaces the table between the markers of the given Markdown file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from leaderworkerset.devcluster import build, versions

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"


@dataclass(frozen=True)
class Suite:
    name: str
    paths: tuple[str, ...]


SUITES = (
    Suite("LWS journeys", ("tests/e2e/test_lws_journeys.py",)),
    Suite("DS journeys", ("tests/e2e/test_ds_journeys.py",)),
    Suite(
        "lifecycle (Hash, budgets, replacement)",
        ("tests/e2e/test_lifecycle.py", "tests/e2e/test_hash_identity.py", "tests/e2e/test_failures.py"),
    ),
    Suite(
        "version-dependent behaviour",
        ("tests/e2e/test_version_window.py", "tests/e2e/test_max_unavailable_emulation.py"),
    ),
    Suite("swap with upstream v0.9.0", ("tests/e2e/install/test_upstream_swap.py",)),
    Suite("chaos: kills (CI size)", ("tests/chaos/faults/test_kills.py",)),
)
UPGRADE = Suite(
    "upgrade "
    + " → ".join(versions.minor_of(v).removeprefix("v") for v in versions.SUPPORTED_KUBERNETES_VERSIONS),
    ("tests/e2e/upgrade",),
)
REAL_NODES_ROW = "real nodes (kubelet, kube-proxy)"


@dataclass(frozen=True)
class Cell:
    passed: int
    failed: int
    skipped: int
    seconds: float

    def __str__(self) -> str:
        parts = [f"{self.passed} passed"]
        if self.failed:
            parts.append(f"**{self.failed} failed**")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        return f"{', '.join(parts)} · {self.seconds / 60:.1f} min"


def run_suite(suite: Suite, version: str, reports: Path) -> Cell:
    paths = [p for p in suite.paths if (ROOT / p).exists()]
    report = reports / f"{versions.minor_of(version)}-{suite.name.split()[0].lower()}.xml"
    env = {**os.environ, versions.KUBERNETES_VERSION_ENV: version}
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *paths],
        cwd=ROOT,
        env=env,
        check=False,
    )
    seconds = time.monotonic() - started
    if not report.exists():
        return Cell(0, 1, 0, seconds)  # pytest did not even collect: count it as a failure
    tests = failed = skipped = 0
    for node in ET.parse(report).getroot().iter("testsuite"):
        tests += int(node.get("tests", 0))
        failed += int(node.get("failures", 0)) + int(node.get("errors", 0))
        skipped += int(node.get("skipped", 0))
    return Cell(tests - failed - skipped, failed, skipped, seconds)


def table(cells: dict[tuple[str, str], Cell], window: list[str], suites: list[Suite]) -> str:
    header = "| suite | " + " | ".join(f"Kubernetes {v}" for v in window) + " |"
    lines = [header, "|---|" + "---|" * len(window)]
    lines.append(f"| {REAL_NODES_ROW} | " + " | ".join(real_nodes_cell(v) for v in window) + " |")
    for suite in suites:
        row = [str(cells[(suite.name, v)]) if (suite.name, v) in cells else "—" for v in window]
        lines.append(f"| {suite.name} | " + " | ".join(row) + " |")
    if (UPGRADE.name, "all") in cells:
        lines.append(
            f"| {UPGRADE.name} (one cluster) | {cells[(UPGRADE.name, 'all')]} |" + " |" * (len(window) - 1)
        )
    return "\n".join(lines)


def real_nodes_cell(version: str) -> str:
    """Every suite here runs on kwok nodes; this row says whether the version's real nodes can be built
    at all (their suites run outside the matrix, docs/real-nodes.md)."""
    reason = versions.NODES_UNAVAILABLE.get(versions.minor_of(version))
    return "built from its module" if reason is None else f"**blocked**: {reason}"


def write_into(path: Path, text: str) -> None:
    doc = path.read_text()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} markers to write the table between")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", default=",".join(versions.SUPPORTED_KUBERNETES_VERSIONS))
    parser.add_argument("--suites", default="", help="comma-separated name prefixes (default: all)")
    parser.add_argument("--no-upgrade", action="store_true", help="skip the upgrade through the window")
    parser.add_argument("--write", type=Path, help="Markdown file whose matrix table is replaced")
    args = parser.parse_args()
    window = [versions.resolve_kubernetes_version(v) for v in args.versions.split(",") if v]
    wanted = [w.strip().lower() for w in args.suites.split(",") if w.strip()]
    suites = [s for s in SUITES if not wanted or any(s.name.lower().startswith(w) for w in wanted)]
    reports = ROOT / "build" / "matrix"
    reports.mkdir(parents=True, exist_ok=True)
    cells: dict[tuple[str, str], Cell] = {}
    for version in window:
        print(f"==> Kubernetes {version}: {build.ensure_binaries(version)}", flush=True)
        for suite in suites:
            print(f"==> {suite.name} on {version}", flush=True)
            cells[(suite.name, version)] = run_suite(suite, version, reports)
            print(f"    {cells[(suite.name, version)]}", flush=True)
    if not args.no_upgrade:
        print(f"==> {UPGRADE.name}", flush=True)
        for version in versions.SUPPORTED_KUBERNETES_VERSIONS:
            build.ensure_binaries(version)
        cells[(UPGRADE.name, "all")] = run_suite(UPGRADE, versions.KUBERNETES_VERSION, reports)
    text = table(cells, window, suites)
    print(text)
    if args.write:
        write_into(args.write, text)
    return 1 if any(cell.failed for cell in cells.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
