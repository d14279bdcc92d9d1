"""Path-by-path comparison of two CRD schemas.

A schema is flattened into ``{path: facts}`` where a path reads like ``.spec.roles[].name`` (``[]``
for array items, ``{}`` for map values, ``|anyOf0`` for a branch) and the facts are the keywords that
change what the API server accepts, defaults or stores. Descriptions are deliberately not facts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

Schema = Mapping[str, Any]

# Keywords that decide acceptance, defaulting, pruning or merge behaviour.
FACT_KEYWORDS: Final = (
    "type",
    "format",
    "default",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "nullable",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
)
REQUIRED: Final = "(required)"


def flatten(schema: Schema, path: str = "") -> dict[str, dict[str, Any]]:
    """Every schema node keyed by path, with its facts (plus whether its parent requires it)."""
    return dict(_walk(schema, path, required=False))


def _walk(schema: Schema, path: str, required: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    facts = {k: schema[k] for k in FACT_KEYWORDS if k in schema}
    facts[REQUIRED] = required
    yield path, facts
    needed = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}", name in needed)
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]", False)
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}", False)
    for i, branch in enumerate(schema.get("anyOf", ())):
        yield from _walk(branch, f"{path}|anyOf{i}", False)


@dataclass(frozen=True)
class Difference:
    path: str
    fact: str  # a keyword, REQUIRED, or "(path)" when the node is missing on one side
    want: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.fact} want {self.want!r} got {self.got!r}"


MISSING: Final = "(path)"


def differences(want: Schema, got: Schema) -> list[Difference]:
    """How ``got`` fails to reproduce ``want`` at ``want``'s paths (extra paths in ``got`` ignored)."""
    ours = flatten(got)
    found: list[Difference] = []
    for path, facts in flatten(want).items():
        if path not in ours:
            found.append(Difference(path, MISSING, "present", "absent"))
            continue
        other = ours[path]
        for fact in sorted(set(facts) | set(other)):
            if facts.get(fact) != other.get(fact):
                found.append(Difference(path, fact, facts.get(fact), other.get(fact)))
    return found


def additions(base: Schema, extended: Schema) -> list[str]:
    """Paths present in ``extended`` but not in ``base`` (only the top of each new subtree)."""
    known = flatten(base)
    added: list[str] = []
    for path in flatten(extended):
        if path in known or any(_within(path, prefix) for prefix in added):
            continue
        added.append(path)
    return added


def _within(path: str, prefix: str) -> bool:
    return path.startswith(prefix) and len(path) > len(prefix) and path[len(prefix)] in ".[{|"
