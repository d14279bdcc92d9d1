"""Our own annotations: one domain that is not upstream's, one table, and the docs generated from it."""

from __future__ import annotations

import re
from pathlib import Path

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext

ROOT = Path(__file__).resolve().parents[3]
_GENERATED = re.compile(
    r"<!-- BEGIN GENERATED: leaderworkerset.api.extensions.markdown_table -->\n(.*)<!-- END GENERATED -->",
    re.S,
)


def test_every_extension_lives_under_our_domain_and_no_upstream_prefix() -> None:
    assert ext.EXTENSIONS, "the table is empty"
    for extension in ext.EXTENSIONS:
        domain, _, name = extension.key.partition("/")
        assert domain == ext.EXTENSION_DOMAIN, extension.key
        assert name, extension.key
        assert not domain.endswith((".x-k8s.io", ".sigs.k8s.io", ".k8s.io")), extension.key


def test_keys_are_unique_and_never_reuse_an_upstream_spelling() -> None:
    keys = [extension.key for extension in ext.EXTENSIONS]
    assert len(keys) == len(set(keys))
    upstream = {value for name, value in vars(c).items() if name.isupper() and isinstance(value, str)}
    assert not set(keys) & upstream


def test_docs_table_is_generated_from_the_extension_table() -> None:
    page = (ROOT / "docs" / "annotations.md").read_text()
    match = _GENERATED.search(page)
    assert match, "docs/annotations.md lost its generated-table markers"
    assert match.group(1) == ext.markdown_table(), (
        "docs/annotations.md is stale; regenerate it from leaderworkerset.api.extensions.markdown_table()"
    )
