"""Differential fuzzing against upstream: random templates over every field of the gofields table,
judged by the Go oracle, compared with our revision code. A dev-time tool (needs Go):

    uv run python tests/oracle/fuzz.py --count 500 --seed 1

Prints each mismatch and exits non-zero if there was one. Nothing is written to the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import cases  # a sibling script, found through the path entry above

from leaderworkerset.core.rollout import revision

HERE = Path(__file__).parent


def oracle(doc: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "lws-oracle"
        subprocess.run(["go", "build", "-o", str(binary), "."], cwd=HERE, check=True)
        out = subprocess.run([str(binary)], input=json.dumps(doc).encode(), capture_output=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def mismatch(row: dict[str, Any]) -> str | None:
    want = row["want"]
    if "error" in want:
        return None
    patch = revision.revision_patch(row["lws"]).decode("utf-8")
    if patch != want["patch"]:
        return f"patch differs:\n  go: {want['patch']}\n  py: {patch}"
    created = revision.new_revision(row["lws"], "", [])
    try:
        restored = revision.revision_patch(revision.apply_revision(row["lws"], created)).decode("utf-8")
    except ValueError as err:
        return None if want["applyError"] else f"apply failed: {err}"
    if want["applyError"] or restored != want["restoredPatch"]:
        return f"apply differs:\n  go: {want['restoredPatch'] or want['applyError']}\n  py: {restored}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = cases.random_template_cases(random.Random(args.seed), args.count)
    doc = {"revisions": rows, "dsRevisions": [], "semantic": [], "quantities": [], "gojson": []}
    failures = 0
    for row in oracle(doc)["revisions"]:
        problem = mismatch(row)
        if problem:
            failures += 1
            print(f"{row['id']}: {problem}")
    print(f"{args.count} templates, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
