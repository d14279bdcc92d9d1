"""Every package's `__init__.py` docstring is the map of its package: it names each of its modules
and subpackages, so a reader finds a module from the package it sits in.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import leaderworkerset

PACKAGE = Path(leaderworkerset.__file__).parent
REPO = PACKAGE.parent.parent


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
