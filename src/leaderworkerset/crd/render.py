"""Deterministic YAML for generated manifests (sorted keys, block style, literal multi-line text)."""

from __future__ import annotations

from typing import Any

import yaml


class _ManifestDumper(yaml.SafeDumper):
    """SafeDumper that never emits anchors (manifests must read the same in every tool)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_ManifestDumper.add_representer(str, _represent_str)


def to_yaml(document: Any) -> str:
    """One YAML document, starting with the ``---`` marker."""
    body = yaml.dump(
        document,
        Dumper=_ManifestDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
    return "---\n" + body
