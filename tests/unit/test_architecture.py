"""The house rules that no linter checks: small modules and classes, no import cycle
anywhere in the package, counting the imports made inside functions (a cycle dodged by a
function-local import is still a cycle), and no public name of `core` defined in two modules.
import-linter checks the layers (pyproject.toml)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import leaderworkerset

PACKAGE = Path(leaderworkerset.__file__).parent
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)  # `from pkg import submodule`


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[name] |= {target for target in _imported(node, name, is_package) if target in known}
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_scan_sees_the_package() -> None:
    assert len(modules()) > 150
    assert "leaderworkerset.core.objects" in import_graph()["leaderworkerset.core.groups.state"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_anywhere_even_through_function_local_imports() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_over_500_lines(name: str) -> None:
    lines = len(modules()[name].read_text("utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name}: {lines} lines"


def test_no_class_over_300_lines() -> None:
    long = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


CORE = PACKAGE / "core"


def public_top_level_names(path: Path) -> set[str]:
    """The public names a module defines at its top level: functions, classes and assignments."""
    names: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def defined_twice(root: Path) -> dict[str, list[str]]:
    """Each public name defined by more than one module under `root`, with those modules."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for name in public_top_level_names(path):
            where.setdefault(name, []).append(path.relative_to(root).as_posix())
    return {name: modules for name, modules in sorted(where.items()) if len(modules) > 1}


def test_the_name_scan_finds_a_name_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("def decide():\n    pass\n\nLIMIT = 1\n_private = 2\n", "utf-8")
    (tmp_path / "sub" / "b.py").write_text(
        "class decide:\n    pass\n\nOTHER: int = 3\n_private = 4\n", "utf-8"
    )
    assert defined_twice(tmp_path) == {"decide": ["a.py", "sub/b.py"]}


def test_no_public_name_is_defined_twice_in_core() -> None:
    """One name, one meaning: a public name of `core` is defined in one module only, so a reader
    who meets it knows which feature it belongs to (`classify` once named two unrelated things)."""
    assert len(list(CORE.rglob("*.py"))) > 80
    assert defined_twice(CORE) == {}
