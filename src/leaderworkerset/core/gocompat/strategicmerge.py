"""apimachinery's strategic merge patch, as far as revision patches use it: ``$patch`` directives,
nulls that remove keys, maps merged key by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StrategicMergeError(ValueError):
    """A patch strategic merge cannot apply (an unknown ``$patch`` directive)."""


PATCH_DIRECTIVE = "$patch"
REPLACE = "replace"
DELETE = "delete"


_DROP = object()  # marks a value strategic merge leaves out of the result


def strategic_merge(original: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """apimachinery's strategic merge of two JSON maps, as far as revision patches use it.

    ``$patch: replace`` swaps the whole map (its content kept verbatim), ``$patch: delete`` empties
    it, null removes a key, maps merge key by key. A patch value for a key the original lacks (or
    holds with another JSON type) is taken with its nulls and directive-bearing maps removed — so a
    stored ``networkConfig`` is ignored when the live object has none, exactly as upstream does.
    Deviation: lists are replaced, never merged by ``patchMergeKey`` (upstream's own revision
    patches only hold lists inside replaced maps).
    """
    if PATCH_DIRECTIVE in patch:
        directive = patch[PATCH_DIRECTIVE]
        if directive == REPLACE:
            return {key: value for key, value in patch.items() if key != PATCH_DIRECTIVE}
        if directive == DELETE:
            return {}
        raise StrategicMergeError(f"unknown patch type {directive!r}")
    merged = dict(original)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
            continue
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = strategic_merge(current, value)
            continue
        same_kind = key in merged and _json_kind(current) == _json_kind(value)
        kept = _remove_directives(value if same_kind else _discard_nulls(value))
        if kept is _DROP:
            merged.pop(key, None)
        else:
            merged[key] = kept
    return merged


def _json_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, list) else "scalar"


def _discard_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _discard_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_discard_nulls(item) for item in value]
    return value


def _remove_directives(value: Any) -> Any:
    if isinstance(value, Mapping):
        if PATCH_DIRECTIVE in value:
            return _DROP
        kept = {key: _remove_directives(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not _DROP}
    if isinstance(value, list):
        return [item for item in map(_remove_directives, value) if item is not _DROP]
    return value
