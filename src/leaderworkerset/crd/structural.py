"""What kube-apiserver does to a custom object with a structural schema before storing it.

Pruning drops fields the schema does not know (unless ``x-kubernetes-preserve-unknown-fields``) and
nulls in non-nullable fields; defaulting then fills absent (or nulled) properties from ``default``,
recursing into what it filled. The root ``metadata`` is the API server's own business (ObjectMeta)
and is left alone. Used by tests to predict what a given CRD stores for an object, and by tooling
that wants to show an object "as the cluster will see it" offline.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def prune_and_default(obj: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """A copy of a whole custom object as the API server would store it (metadata untouched)."""
    result = copy.deepcopy(obj)
    metadata = result.pop("metadata", None)
    pruned = prune(result, schema)
    defaulted = default(pruned, schema)
    if metadata is not None:
        defaulted["metadata"] = metadata
    return dict(defaulted)


def prune(value: Any, schema: Schema) -> Any:
    """``value`` without unknown fields and without nulls where the schema does not allow null."""
    if isinstance(value, dict):
        return _prune_object(value, schema)
    if isinstance(value, list) and "items" in schema:
        return [prune(item, schema["items"]) for item in value]
    return value


def _prune_object(value: dict[str, Any], schema: Schema) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, item in value.items():
        sub = _field_schema(schema, key)
        if sub is None:
            if schema.get(_PRESERVE) or schema.get("additionalProperties") is True:
                kept[key] = item
            continue
        if item is None and not sub.get("nullable", False):
            continue
        kept[key] = prune(item, sub)
    return kept


def default(value: Any, schema: Schema) -> Any:
    """``value`` with schema defaults applied to absent properties, recursively."""
    if isinstance(value, dict):
        return _default_object(value, schema)
    if isinstance(value, list) and "items" in schema:
        items = schema["items"]
        filled = [_null_default(item, items) for item in value]
        return [default(item, items) for item in filled]
    return value


def _default_object(value: dict[str, Any], schema: Schema) -> dict[str, Any]:
    properties: Mapping[str, Schema] = schema.get("properties", {})
    result = dict(value)
    for key, prop in properties.items():
        if "default" in prop and (key not in result or _non_nullable_null(result[key], prop)):
            result[key] = copy.deepcopy(prop["default"])
    for key, item in result.items():
        sub = _field_schema(schema, key)
        if sub is not None:
            result[key] = default(item, sub)
    return result


def _field_schema(schema: Schema, key: str) -> Schema | None:
    """The schema of property ``key``: a declared property, else the map value schema."""
    properties: Mapping[str, Schema] = schema.get("properties", {})
    if key in properties:
        return properties[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _null_default(item: Any, schema: Schema) -> Any:
    if "default" in schema and _non_nullable_null(item, schema):
        return copy.deepcopy(schema["default"])
    return item


def _non_nullable_null(item: Any, schema: Schema) -> bool:
    return item is None and not schema.get("nullable", False)
