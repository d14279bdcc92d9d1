"""docs/install.md shows the RBAC table exactly as install/rbac.py has it."""

from __future__ import annotations

from pathlib import Path

from leaderworkerset.install import rbac

DOC = Path(__file__).resolve().parents[3] / "docs" / "install.md"


def test_the_rbac_table_in_the_docs_is_current() -> None:
    table = rbac.markdown_table(rbac.rules())
    assert table in DOC.read_text(), "regenerate the table: rbac.markdown_table(rbac.rules())"
    assert table.count("\n") == len(rbac.rules()) + 2
