"""Make a JSON value look as if Go had decoded it into its k8s.io/api type and encoded it again.

Upstream builds the revision patch from a typed Go object, so the hash sees Go's view of the
template, not the text the user sent: unknown fields are gone, zero values of fields without
``omitempty`` appear (``"name":""``, ``"resources":{}``), nil pointers and empty slices/maps with
``omitempty`` disappear, quantities are canonical, a zero ``creationTimestamp`` is omitted.

Which field does what is not written here by hand: ``core/gocompat/data/gofields.json`` is generated from
the Go types by ``hack/gofields`` (reflection over k8s.io/api). This module only implements the
generic rules of ``encoding/json`` plus the handful of custom (un)marshalers the table names.

Input is JSON data (dicts, lists, str, int, float, bool, None) as the API server returns it;
``None`` and a missing key both mean "zero value", as they do for Go's decoder. Output objects
list struct fields in Go declaration order and map keys sorted, which is the order Go's
``json.Marshal`` of the typed value uses (see ``gojson.dumps_typed``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from importlib import resources
from typing import Any

from leaderworkerset.core.gocompat.quantity import QuantityError, canonical_json_quantity

__all__ = ["GoDecodeError", "GoType", "go_encode", "normalize"]


class GoDecodeError(ValueError):
    """Go's decoder would reject this value for the target type (so would upstream's cache)."""


@dataclass(frozen=True)
class GoType:
    kind: str
    name: str = ""
    elem: GoType | None = None
    bits: int = 0


@dataclass(frozen=True)
class GoField:
    json: str
    type: GoType
    omitempty: bool
    omitzero: bool


@dataclass(frozen=True)
class GoTable:
    roots: dict[str, str]
    structs: dict[str, tuple[GoField, ...]]


def _parse_type(raw: dict[str, Any]) -> GoType:
    elem = raw.get("elem")
    return GoType(
        kind=raw["kind"],
        name=raw.get("name", ""),
        elem=_parse_type(elem) if elem is not None else None,
        bits=raw.get("bits", 0),
    )


@functools.cache
def go_table() -> GoTable:
    """The generated field table (package data, read once)."""
    text = resources.files("leaderworkerset.core.gocompat.data").joinpath("gofields.json").read_text("utf-8")
    raw = json.loads(text)
    structs = {
        name: tuple(
            GoField(
                json=field["json"],
                type=_parse_type(field["type"]),
                omitempty=field.get("omitempty", False),
                omitzero=field.get("omitzero", False),
            )
            for field in body["fields"]
        )
        for name, body in raw["structs"].items()
    }
    return GoTable(roots=dict(raw["roots"]), structs=structs)


def normalize(value: Any, root: str) -> Any:
    """Go's decode-then-encode of ``value`` as the root type ``root`` (e.g. "LeaderWorkerTemplate")."""
    table = go_table()
    return go_encode(GoType(kind="struct", name=table.roots[root]), value, root)


# --------------------------------------------------------------------------------------------------
# encoding: the JSON Go writes for the value it decoded from ``value``
# --------------------------------------------------------------------------------------------------


def go_encode(go_type: GoType, value: Any, path: str) -> Any:
    encoder = _ENCODERS.get(go_type.kind)
    if encoder is None:
        raise GoDecodeError(f"{path}: Go kind {go_type.kind!r} is not supported")
    return encoder(go_type, value, path)


def _encode_struct(go_type: GoType, value: Any, path: str) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise GoDecodeError(f"{path}: expected an object, got {_json_kind(value)}")
    out: dict[str, Any] = {}
    for field in go_table().structs[go_type.name]:
        item = value.get(field.json)
        encoded = go_encode(field.type, item, f"{path}.{field.json}")
        if not _omitted(field, item, encoded):
            out[field.json] = encoded
    return out


def _encode_ptr(go_type: GoType, value: Any, path: str) -> Any:
    if value is None:
        return None
    assert go_type.elem is not None
    return go_encode(go_type.elem, value, path)


def _encode_slice(go_type: GoType, value: Any, path: str) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise GoDecodeError(f"{path}: expected an array, got {_json_kind(value)}")
    assert go_type.elem is not None
    elem = go_type.elem
    return [go_encode(elem, item, f"{path}[{index}]") for index, item in enumerate(value)]


def _encode_map(go_type: GoType, value: Any, path: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise GoDecodeError(f"{path}: expected an object, got {_json_kind(value)}")
    assert go_type.elem is not None
    elem = go_type.elem
    # Go writes map keys sorted; keeping them sorted here lets gojson.dumps_typed follow dict order.
    return {key: go_encode(elem, value[key], f"{path}[{key}]") for key in sorted(value)}


def _encode_string(go_type: GoType, value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise GoDecodeError(f"{path}: expected a string, got {_json_kind(value)}")
    return value


def _encode_bool(go_type: GoType, value: Any, path: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise GoDecodeError(f"{path}: expected a boolean, got {_json_kind(value)}")
    return value


def _encode_int(go_type: GoType, value: Any, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
        return 0  # the literal "-0", which ParseInt accepts (gojson.loads keeps its sign)
    # Go parses the literal with ParseInt: "1.0" and "1e3" are errors, so must a float be here.
    if isinstance(value, bool) or not isinstance(value, int):
        raise GoDecodeError(f"{path}: expected an integer, got {_json_kind(value)}")
    bits = go_type.bits or 64
    low, high = (0, 2**bits - 1) if go_type.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not low <= value <= high:
        raise GoDecodeError(f"{path}: {value} overflows a {bits}-bit {go_type.kind}")
    return value


def _encode_float(go_type: GoType, value: Any, path: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GoDecodeError(f"{path}: expected a number, got {_json_kind(value)}")
    return float(value)


def _encode_quantity(go_type: GoType, value: Any, path: str) -> str:
    if value is None:
        return "0"
    try:
        return canonical_json_quantity(value)
    except QuantityError as err:
        raise GoDecodeError(f"{path}: {err}") from err


def _encode_int_or_string(go_type: GoType, value: Any, path: str) -> int | str:
    if value is None:
        return 0
    if isinstance(value, str):
        return value
    return _encode_int(GoType(kind="int", bits=32), value, path)


def _encode_time(go_type: GoType, value: Any, path: str) -> str | None:
    instant = _parse_time(value, path)
    if instant is None:
        return None
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def _encode_raw(go_type: GoType, value: Any, path: str) -> Any:
    # FieldsV1 keeps the raw JSON it was given and writes it back untouched.
    return value


_ENCODERS = {
    "struct": _encode_struct,
    "ptr": _encode_ptr,
    "slice": _encode_slice,
    "map": _encode_map,
    "string": _encode_string,
    "bool": _encode_bool,
    "int": _encode_int,
    "uint": _encode_int,
    "float": _encode_float,
    "quantity": _encode_quantity,
    "intorstring": _encode_int_or_string,
    "time": _encode_time,
    "rawjson": _encode_raw,
}

# --------------------------------------------------------------------------------------------------
# omitempty / omitzero, decided on the Go value (i.e. after decoding, so type errors still surface)
# --------------------------------------------------------------------------------------------------

_SCALAR_KINDS = frozenset({"string", "bool", "int", "uint", "float"})


def _omitted(field: GoField, item: Any, encoded: Any) -> bool:
    if field.omitempty and _is_empty(field.type, item, encoded):
        return True
    return field.omitzero and _is_zero(field.type, item, encoded)


def _is_empty(go_type: GoType, item: Any, encoded: Any) -> bool:
    """encoding/json's omitempty: false/0/"", nil pointers, empty slices and maps; never a struct
    (custom-marshalled ones such as Quantity included)."""
    kind = go_type.kind
    if kind in _SCALAR_KINDS:
        return not encoded
    if kind == "ptr":
        # Decided on the input: a set pointer to a zero Time is kept and written as null.
        return item is None
    if kind in ("slice", "map", "bytes"):
        return encoded is None or len(encoded) == 0
    return False


def _is_zero(go_type: GoType, item: Any, encoded: Any) -> bool:
    """encoding/json's omitzero: the type's IsZero method where it has one, else reflect's zero."""
    kind = go_type.kind
    if kind in _SCALAR_KINDS:
        return not encoded
    if kind == "time":
        return encoded is None
    if kind == "quantity":
        return bool(encoded == "0")
    if kind == "intorstring":
        return isinstance(encoded, int) and encoded == 0
    if kind == "struct":
        fields = go_table().structs[go_type.name]
        given = item if isinstance(item, Mapping) else {}
        return all(
            _is_zero(f.type, given.get(f.json), go_encode(f.type, given.get(f.json), f.json)) for f in fields
        )
    return item is None  # pointers, slices, maps: only nil (null or absent input) is zero


# --------------------------------------------------------------------------------------------------
# metav1.Time
# --------------------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|([+-])(\d{2}):(\d{2}))\Z"
)
_GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def _parse_time(value: Any, path: str) -> datetime | None:
    """A metav1.Time as Go parses it (RFC 3339, any offset, fraction ignored on output);
    None for the zero time, which Go writes as null."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise GoDecodeError(f"{path}: expected a time string, got {_json_kind(value)}")
    match = _RFC3339.match(value)
    if match is None:
        raise GoDecodeError(f"{path}: {value!r} is not an RFC 3339 time")
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    sign, off_hours, off_minutes = match.group(7), match.group(8), match.group(9)
    offset = timedelta(0)
    if sign is not None:
        offset = timedelta(hours=int(off_hours), minutes=int(off_minutes))
        offset = -offset if sign == "-" else offset
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        instant = local.astimezone(UTC)
    except (ValueError, OverflowError) as err:
        raise GoDecodeError(f"{path}: {value!r}: {err}") from err
    return None if instant == _GO_ZERO_TIME else instant


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
