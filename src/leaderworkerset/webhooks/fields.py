"""Tolerant readers for the JSON the API server sends.

The validating webhook only sees schema-valid objects, but the mutating one (and direct callers)
may not; these readers return Go's zero value for a missing or mistyped field instead of raising,
so a handler never fails with an exception on odd input.
"""

from leaderworkerset.core.objects import MutableObj


def child(obj: object, *keys: str) -> MutableObj:
    """The nested object at `keys`, or {} when any step is missing or not an object."""
    current: object = obj
    for key in keys:
        if not isinstance(current, dict):
            return {}
        current = current.get(key)
    return current if isinstance(current, dict) else {}


def present(obj: object, key: str) -> bool:
    """The key exists with a non-null value (a Go pointer that is not nil)."""
    return isinstance(obj, dict) and obj.get(key) is not None


def opt_int(obj: object, key: str) -> int | None:
    """An integer field, or None when absent/null/mistyped (a nil *int32)."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def string(obj: object, key: str) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def opt_string(obj: object, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def int_or_string(obj: object, key: str) -> int | str:
    """An IntOrString field; Go's zero value (int 0) when absent or mistyped."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 0


def string_map(obj: object, key: str) -> dict[str, str]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()}


def items(obj: object, key: str) -> list[MutableObj]:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]
