"""The maps a reader finds the code by stay true, and the repository stands alone
(docs/architecture.md, CONTRIBUTING.md):

* every package's `__init__.py` docstring names each of its modules and subpackages;
* no tracked file cites a document or a tracker a reader of this repository does not have;
* every path a feature doc's "Where the code is" section names exists, and so does every path
  docs/architecture.md names.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

import leaderworkerset

PACKAGE = Path(leaderworkerset.__file__).parent
REPO = PACKAGE.parent.parent
DOCS = REPO / "docs"


# ----- package maps -------------------------------------------------------------------------------
def packages() -> list[Path]:
    return sorted(path.parent for path in PACKAGE.rglob("__init__.py"))


def members(package: Path) -> set[str]:
    """The modules and subpackages of a package (`__main__` and `__init__` are no members)."""
    modules = {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    subpackages = {p.parent.name for p in package.glob("*/__init__.py")}
    return modules | subpackages


def named(docstring: str) -> set[str]:
    """The names a docstring gives in backticks: `x`, ``x``, `x.py`, `x/`, `pkg/x.py`, `pkg.x`."""
    found = set()
    for span in re.findall(r"`+([^`]+?)`+", docstring):
        tail = span.strip().removesuffix("/").removesuffix(".py")
        found.add(re.split(r"[./\s]", tail)[-1])
    return found


def unnamed(package: Path) -> set[str]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text("utf-8"))) or ""
    return members(package) - named(docstring)


def test_the_map_check_sees_a_missing_module(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("", "utf-8")
    (tmp_path / "__init__.py").write_text('"""* `alpha` — one; ``beta.py`` — two."""\n', "utf-8")
    for module in ("alpha", "beta", "gamma", "__main__"):
        (tmp_path / f"{module}.py").write_text("", "utf-8")
    assert unnamed(tmp_path) == {"gamma", "sub"}


def test_the_map_check_covers_every_layer() -> None:
    names = {p.relative_to(PACKAGE.parent).as_posix() for p in packages()}
    for layer in ("core", "controllers", "webhooks", "runtime", "api", "cli", "crd", "devcluster", "install"):
        assert f"leaderworkerset/{layer}" in names
    assert len(names) > 25


@pytest.mark.parametrize(
    "package", packages(), ids=lambda p: p.relative_to(PACKAGE.parent).as_posix().replace("/", ".")
)
def test_every_package_map_names_each_of_its_modules(package: Path) -> None:
    """A package's docstring is its map: a module it does not name is one a reader cannot find."""
    assert unnamed(package) == set(), f"{package.relative_to(REPO)}/__init__.py does not name them"


# ----- no citation of what the repository does not hold -------------------------------------------
# Our working documents and our tracker, as they were cited: "design.md §3", "spec §3.C C12",
# "features.md", "issue 25", "Issue 27's", "issue #8", "(#31)". Upstream is cited by repository and number
# (kubernetes-sigs/lws#1048, lws#1048), which none of these match.
OUTSIDE = re.compile(
    r"design\.md|features\.md|testcluster\.md|\bspec §|\bspec \d+\.|§\s?\d|"
    r"\b[Ii]ssue #?\d+|(?<![\w/-])\(#\d+\)|shared/spec|shared/design"
)
# RFC sections are public. (Tests load upstream's files from ../shared/upstream, README "Optional
# upstream data": a data path, not a citation, which no pattern here matches.)
ALLOWED = re.compile(r"RFC \d+ §\d")


def outside_citations(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line) and not ALLOWED.search(line)]


def test_the_citation_scan_tells_ours_from_upstreams() -> None:
    ours = (
        "see design.md §4\nspec §3.C C12\n(issue 25)\nIssue 27's promise\nfixed (#31)\nfeatures.md §2.6\n"
        "(issue #8)\n"
    )
    upstream = "kubernetes-sigs/lws#1048\nlws#1048\nRFC 8446 §5.1\nthe issuer\nissue a certificate\n"
    assert len(outside_citations(ours)) == 7
    assert outside_citations(upstream) == []


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    files = []
    for name in listed:
        path = REPO / name
        if name and path.is_file() and path != Path(__file__):
            try:
                path.read_text("utf-8")
            except UnicodeDecodeError:
                continue  # binary
            files.append(path)
    return files


def test_no_tracked_file_cites_a_document_or_tracker_outside_the_repository() -> None:
    files = tracked_text_files()
    assert len(files) > 500
    cited = {
        f"{path.relative_to(REPO)}: {line}"
        for path in files
        for line in outside_citations(path.read_text("utf-8"))
    }
    assert sorted(cited) == []


# ----- the code paths the docs name ---------------------------------------------------------------
# The first segment of a path the docs give: source paths are relative to src/leaderworkerset/,
# the rest to the repository root.
SOURCE_ROOTS = {"api", "core", "controllers", "webhooks", "runtime", "crd", "install", "devcluster", "cli"}
REPO_ROOTS = {"tests", "docs", "deploy", "charts", "hack", "benchmarks", "src"}
WHERE = "## Where the code is"


def code_paths(text: str) -> list[str]:
    """The backticked paths of a text, e.g. `core/rollout/round.py`, `controllers/quarantine/`."""
    paths = []
    for span in re.findall(r"`([^`\s]+)`", text):
        if "<" in span or "*" in span or "..." in span:
            continue  # a pattern, e.g. `core/<name>/`
        first = span.split("/")[0]
        is_file = span == "agent.py"
        if is_file or ("/" in span and (first in SOURCE_ROOTS or first in REPO_ROOTS)):
            paths.append(span)
    return paths


def exists(path: str) -> bool:
    return (PACKAGE / path).exists() or (REPO / path).exists()


def where_the_code_is(doc: Path) -> str:
    text = doc.read_text("utf-8")
    start = text.index(WHERE) + len(WHERE)
    following = re.search(r"^## ", text[start:], re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


FEATURE_DOCS = sorted(p for p in DOCS.glob("*.md") if WHERE in p.read_text("utf-8"))


def test_the_path_scan_reads_paths_and_only_paths() -> None:
    text = "`core/rollout/round.py`, `controllers/quarantine/`, `tests/e2e/x.py`, `agent.py`, " + (
        "`leaderworkerset.dev/update-strategy`, `lws status`, `InPlace`"
    )
    paths = ["core/rollout/round.py", "controllers/quarantine/", "tests/e2e/x.py", "agent.py"]
    assert code_paths(text) == paths
    assert exists("core/rollout/round.py")
    assert exists("tests/unit/test_maps.py")
    assert not exists("core/rollout/nothing.py")


def test_every_feature_doc_says_where_its_code_is() -> None:
    names = {p.name for p in FEATURE_DOCS}
    for doc in (
        "in-place-updates.md",  # inplaceupdate
        "in-place-restart.md",  # inplacerestart
        "capacity-aware-surge.md",  # surgefallback
        "disruption-budgets.md",  # disruptionbudget
        "node-quarantine.md",  # quarantine
        "lifecycle.md",  # restartbudget, hashidentity
        "failures.md",  # ledger, restartbackoff
        "rollout-control.md",  # rolloutcontrol
    ):
        assert doc in names


@pytest.mark.parametrize("doc", FEATURE_DOCS, ids=lambda p: p.name)
def test_every_path_a_feature_doc_names_exists(doc: Path) -> None:
    paths = code_paths(where_the_code_is(doc))
    assert len(paths) >= 5
    assert [p for p in paths if not exists(p)] == []


def test_every_path_the_architecture_names_exists() -> None:
    paths = code_paths((DOCS / "architecture.md").read_text("utf-8"))
    assert len(paths) > 60
    assert [p for p in paths if not exists(p)] == []
