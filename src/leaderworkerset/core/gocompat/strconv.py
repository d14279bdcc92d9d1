"""Go's strconv and integer arithmetic where Python's differ (Atoi, truncating / and %)."""

from __future__ import annotations

import re

_GO_INT64_MIN = -(2**63)
_GO_INT64_MAX = 2**63 - 1


_GO_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")


class GoParseError(ValueError):
    """An integer parse failure worded as Go's strconv.Atoi words it (admission messages quote it)."""


def go_atoi(text: str) -> int:
    """Parse a decimal integer exactly as Go's strconv.Atoi accepts it (sign, ASCII digits, int64)."""
    if not _GO_DECIMAL.match(text):
        raise GoParseError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not _GO_INT64_MIN <= value <= _GO_INT64_MAX:
        raise GoParseError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value


def go_atoi_positive(text: str) -> int | None:
    """`go_atoi` of a count that must be at least 1; None when it does not parse or is below 1."""
    try:
        value = go_atoi(text)
    except GoParseError:
        return None
    return value if value > 0 else None


def go_atoi_field(text: str, field: str, pod: str) -> int:
    """`go_atoi` of a pod's label or annotation; the error names the field and the pod before Go's
    own wording (upstream returns the bare strconv error, which names neither)."""
    try:
        return go_atoi(text)
    except GoParseError as err:
        raise GoParseError(f"{field} of pod {pod}: {err}") from err


def go_div(numerator: int, denominator: int) -> int:
    """Quotient truncated toward zero, as Go's `/` computes it on integers (Python floors)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def go_mod(numerator: int, denominator: int) -> int:
    """Remainder with the sign of the numerator, as Go's `%` computes it."""
    return numerator - denominator * go_div(numerator, denominator)
