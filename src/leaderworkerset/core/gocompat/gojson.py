"""JSON text exactly as Go's ``encoding/json`` writes a value decoded into ``interface{}``.

Upstream hashes the bytes of ``json.Marshal(map[string]interface{})``. Reproducing them needs Go's
rules, which differ from Python's ``json`` module in several ways:

* object keys are sorted by byte order at every level and the output is compact;
* ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped (``\\u003c`` …), ``\\b`` and ``\\f`` use their
  short escapes, other control characters ``\\u00XX``; everything else, non-ASCII included, is
  written as raw UTF-8;
* every number went through ``float64``: integers above 2**53 lose precision, and the text is the
  shortest round-tripping form in plain decimal notation, switching to exponent notation below
  1e-6 or from 1e21 on (with Go's ``e-07`` → ``e-7`` clean-up);
* a string that held invalid UTF-8 (a lone surrogate, in Python terms) was already turned into
  U+FFFD by Go's decoder, so it is written as that character.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = ["GoJSONError", "dumps", "dumps_typed", "format_float", "loads"]


class GoJSONError(ValueError):
    """The value cannot exist after a Go decode (NaN, infinity, out-of-range number, odd type)."""


_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')
_REPLACEMENT = "\ufffd"


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    if "\ud800" <= char <= "\udfff":
        return _REPLACEMENT
    return f"\\u{ord(char):04x}"


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _go_key(key: str) -> str:
    """The map key Go ends up with: lone surrogates became U+FFFD while decoding."""
    return re.sub("[\ud800-\udfff]", _REPLACEMENT, key)


def format_float(value: float) -> str:
    """Go's ``encoding/json`` text for a float64 (``strconv.AppendFloat`` with bitSize 64)."""
    if math.isnan(value) or math.isinf(value):
        raise GoJSONError(f"unsupported value: {value!r}")
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        return _exponent_form(value)
    return _plain_form(value)


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-tripping digits and decimal exponent: value == 0.DIGITS * 10**exponent.

    Python's ``repr`` and Go's ``strconv`` both produce the shortest digit string that reads back
    as the same float64, so only the layout has to be redone.
    """
    sign_bit, digit_tuple, exp = Decimal(repr(abs(value))).normalize().as_tuple()
    del sign_bit
    assert isinstance(exp, int)  # finite by construction
    digits = "".join(map(str, digit_tuple))
    return digits, len(digits) + exp


def _plain_form(value: float) -> str:
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, exponent = _shortest_digits(value)
    if exponent <= 0:
        return f"{sign}0.{'0' * -exponent}{digits}"
    if exponent >= len(digits):
        return sign + digits + "0" * (exponent - len(digits))
    return f"{sign}{digits[:exponent]}.{digits[exponent:]}"


def _exponent_form(value: float) -> str:
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(value)
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    power = exponent - 1
    # Go prints at least two exponent digits and then trims a single leading zero of a negative
    # exponent ("e-07" → "e-7"); positive exponents keep theirs, which never happens at >= 1e21.
    exp_sign = "-" if power < 0 else "+"
    exp_digits = f"{abs(power):02d}"
    if exp_sign == "-" and exp_digits.startswith("0"):
        exp_digits = exp_digits[1:]
    return f"{sign}{mantissa}e{exp_sign}{exp_digits}"


def _number(value: int | float) -> str:
    if isinstance(value, int):
        try:
            value = float(value)
        except OverflowError as err:
            raise GoJSONError(f"number {value} out of float64 range") from err
    return format_float(value)


@dataclass(frozen=True)
class _Mode:
    sort_keys: bool  # a Go map (sorted) versus a typed struct (declaration order, given by dict order)
    exact_ints: bool  # a typed int field versus a number that went through float64


_MAP_MODE = _Mode(sort_keys=True, exact_ints=False)
_TYPED_MODE = _Mode(sort_keys=False, exact_ints=True)


def _write(value: Any, out: list[str], mode: _Mode) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int) and mode.exact_ints:
        out.append(str(value))
    elif isinstance(value, int | float):
        out.append(_number(value))
    elif isinstance(value, Mapping):
        _write_object(value, out, mode)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        _write_array(value, out, mode)
    else:
        raise GoJSONError(f"unsupported type {type(value).__name__}")


def _write_object(value: Mapping[Any, Any], out: list[str], mode: _Mode) -> None:
    entries: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise GoJSONError(f"object key {key!r} is not a string")
        entries[_go_key(key)] = item
    out.append("{")
    for index, key in enumerate(sorted(entries) if mode.sort_keys else entries):
        if index:
            out.append(",")
        out.append(_quote(key))
        out.append(":")
        _write(entries[key], out, mode)
    out.append("}")


def _write_array(value: Sequence[Any], out: list[str], mode: _Mode) -> None:
    out.append("[")
    for index, item in enumerate(value):
        if index:
            out.append(",")
        _write(item, out, mode)
    out.append("]")


def dumps(value: Any) -> bytes:
    """Encode ``value`` (plain JSON data) the way Go re-marshals it after decoding into a map."""
    out: list[str] = []
    _write(value, out, _MAP_MODE)
    return "".join(out).encode("utf-8")


def dumps_typed(value: Any) -> bytes:
    """Encode the Go view of a typed value (``gonormalize`` output) as ``json.Marshal`` of the
    typed Go value does: object keys in the order given (struct declaration order, maps already
    sorted), integers exactly, strings escaped as in ``dumps``."""
    out: list[str] = []
    _write(value, out, _TYPED_MODE)
    return "".join(out).encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise GoJSONError(f"invalid JSON literal {name}")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise GoJSONError(f"number {text} out of float64 range")
    return value


def _parse_int(text: str) -> int | float:
    # "-0" is a negative zero for Go's float64 but would be a plain 0 as a Python int.
    value = int(text)
    return -0.0 if value == 0 and text.startswith("-") else value


def loads(data: str | bytes) -> Any:
    """Parse JSON text, refusing what Go's decoder refuses (NaN/Infinity, overflowing numbers).

    Integers are kept as Python ints so that callers that need Go's integer semantics (typed int
    fields, quantities) still see the exact literal; ``dumps`` applies the float64 step itself.
    """
    return json.loads(data, parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int)
