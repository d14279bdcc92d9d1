"""Kubernetes resource quantities, canonicalised the way apimachinery's ``resource.Quantity`` does.

A Go controller decodes every quantity of a pod template into ``resource.Quantity`` and writes it
back with ``MarshalJSON``; the revision hash sees that text, so we must produce the same string.
The rules, restated:

* The text is ``[sign] digits [. digits] [suffix]``. Suffixes are the decimal SI ones
  (``n u m "" k M G T P E``), the binary ones (``Ki … Ei``) or a decimal exponent (``e3``, ``E-2``).
* When the number is small enough to be held exactly as an int64 at a scale of at least 10**-9,
  and the text is already in canonical shape (decimal: scale a multiple of 3, no ``000`` at the end
  and no leading zero; binary: a power of 1024 suffix and a value not divisible by 8), Go keeps the
  original text verbatim. This is why ``1e3`` and ``+1`` survive unchanged while ``1000m`` does not.
* Otherwise the value is computed exactly, values finer than 1n are rounded away from zero to
  nano precision, binary values are capped at 2**63-1, and the canonical text is produced:
  binary-suffixed values of at least 1024 in magnitude that are whole numbers are written as
  ``mantissa`` + the largest fitting binary suffix; everything else is written in decimal with an
  exponent that is a multiple of three, using the SI suffix (or ``eN`` for exponent-style input).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from leaderworkerset.core.gocompat.gojson import format_float

__all__ = [
    "Quantity",
    "QuantityError",
    "add_quantities",
    "canonical_json_quantity",
    "compare_quantities",
    "parse_quantity",
]

_INT64_MAX = (1 << 63) - 1
_NANO = -9
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")


class QuantityError(ValueError):
    """The text is not a quantity (apimachinery's ErrFormatWrong / ErrSuffix / ErrNumeric)."""


class Format(enum.Enum):
    DECIMAL_EXPONENT = "DecimalExponent"
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"


_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {exp // 10: suffix for suffix, exp in _BINARY_SUFFIXES.items()}


@dataclass(frozen=True)
class Quantity:
    """An exact value ``unscaled * 10**exponent`` with its format and, when Go would keep the
    input text as-is, that text."""

    unscaled: int
    exponent: int
    format: Format
    verbatim: str | None = None

    def canonical(self) -> str:
        """The JSON string Go's ``Quantity.MarshalJSON`` writes (without the quotes)."""
        if self.verbatim is not None:
            return self.verbatim
        if self.unscaled == 0:
            return "0"
        if self.format is Format.BINARY_SI and self._is_binary_printable():
            return self._binary_text()
        fmt = Format.DECIMAL_SI if self.format is Format.BINARY_SI else self.format
        return self._decimal_text(fmt)

    def _is_binary_printable(self) -> bool:
        if self.exponent >= 0:
            magnitude_at_least_1024 = abs(self.unscaled) * _pow10(self.exponent) >= 1024
            return magnitude_at_least_1024
        divisor = _pow10(-self.exponent)
        whole = self.unscaled % divisor == 0
        return whole and abs(self.unscaled) >= 1024 * divisor

    def _binary_text(self) -> str:
        value = (
            self.unscaled * _pow10(self.exponent)
            if self.exponent >= 0
            else self.unscaled // _pow10(-self.exponent)
        )
        power = 0
        while value % 1024 == 0:
            value //= 1024
            power += 1
        return str(value) + _BINARY_BY_POWER.get(power, "")

    def _decimal_text(self, fmt: Format) -> str:
        mantissa, exponent = _strip_tens(self.unscaled, self.exponent)
        while exponent % 3:
            mantissa *= 10
            exponent -= 1
        if fmt is Format.DECIMAL_SI:
            # Exponents beyond the SI table (above 10**18) silently lose their suffix in Go.
            return str(mantissa) + _DECIMAL_BY_EXPONENT.get(exponent, "")
        return str(mantissa) + (f"e{exponent}" if exponent else "")


def _pow10(exponent: int) -> int:
    """10**exponent for exponent >= 0 (typed: ``int ** int`` is Any to mypy)."""
    return int(10**exponent)


def _strip_tens(unscaled: int, exponent: int) -> tuple[int, int]:
    text = str(abs(unscaled))
    stripped = text.rstrip("0")
    removed = len(text) - len(stripped)
    mantissa = int(stripped) if unscaled > 0 else -int(stripped)
    return mantissa, exponent + removed


def _int32(value: int) -> int:
    """Go's int32 conversion (wrap-around), which the suffix exponent goes through."""
    return (value + 2**31) % 2**32 - 2**31


@dataclass(frozen=True)
class _Pieces:
    positive: bool
    value: str  # sign, digits and point as written (what the slow path parses)
    num: str  # integer digits without leading zeros ("0" if none)
    denom: str  # fraction digits
    suffix: str


_DIGITS = re.compile(r"[0-9]*")


def _split(text: str) -> _Pieces:
    """Cut the text into number and suffix exactly where apimachinery does."""
    pos = 0
    positive = True
    if text[:1] in ("-", "+"):
        positive = text[0] == "+"
        pos = 1
    while pos < len(text) and text[pos] == "0":
        pos += 1
    if pos == len(text):
        return _Pieces(positive, "0", "0", "", "")
    num_end = _DIGITS.match(text, pos).end()  # type: ignore[union-attr]
    num = text[pos:num_end] or "0"
    pos = num_end
    denom = ""
    if pos < len(text) and text[pos] == ".":
        denom_end = _DIGITS.match(text, pos + 1).end()  # type: ignore[union-attr]
        denom = text[pos + 1 : denom_end]
        pos = denom_end
    value = text[:pos]
    return _Pieces(positive, value, num, denom, _check_suffix(text, pos))


def _check_suffix(text: str, start: int) -> str:
    pos = start
    while pos < len(text) and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < len(text) and text[pos] in "+-":
        pos += 1
    if _DIGITS.match(text, pos).end() != len(text):  # type: ignore[union-attr]
        raise QuantityError(f"quantities must match the regular expression: {text!r}")
    return text[start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if -(2**63) <= exponent < 2**63:
            return 10, _int32(exponent), Format.DECIMAL_EXPONENT
    raise QuantityError(f"unable to parse quantity's suffix: {suffix!r}")


def parse_quantity(text: str) -> Quantity:
    """apimachinery's ``ParseQuantity``."""
    if not text:
        raise QuantityError("quantities must match the regular expression")
    if text == "0":
        return Quantity(0, 0, Format.DECIMAL_SI, verbatim="0")
    pieces = _split(text)
    base, exponent, fmt = _interpret(pieces.suffix)
    fast = _parse_fast(text, pieces, exponent, fmt)
    if fast is not None:
        return fast
    return _parse_exact(pieces, base, exponent, fmt)


def _parse_fast(text: str, pieces: _Pieces, exponent: int, fmt: Format) -> Quantity | None:
    """Go's int64 path; None when the value does not fit it."""
    multiplier = 1
    if fmt is Format.BINARY_SI:
        if pieces.denom:
            return None
        scale = 0
        multiplier = 1 << exponent
        precision = 15 - len(pieces.num) - exponent * 3 // 10 - 1
    else:
        scale = exponent
        precision = 18 - len(pieces.num) - len(pieces.denom)
    if precision < 0:
        return None
    scale = _int32(scale - len(pieces.denom))
    if scale < _NANO:
        return None
    shifted = pieces.num + pieces.denom
    digits = int(shifted)
    result = digits * multiplier
    if result > _INT64_MAX:
        return None
    if not pieces.positive:
        result = -result
    if fmt is Format.BINARY_SI:
        keep = exponent % 10 == 0 and digits & 7 != 0
    else:
        keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return Quantity(result, scale, fmt, verbatim=text if keep else None)


def _parse_exact(pieces: _Pieces, base: int, exponent: int, fmt: Format) -> Quantity:
    """Go's arbitrary-precision path (inf.Dec)."""
    match = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?", pieces.value)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(f"quantities must match the regular expression: {pieces.value!r}")
    fraction = match.group(3) or ""
    magnitude = int((match.group(2) + fraction) or "0")
    scale10 = -len(fraction)
    if base == 10:
        scale10 += exponent
    else:
        magnitude <<= exponent
    if magnitude and scale10 < _NANO:
        magnitude, scale10 = _round_up_to_nano(magnitude, scale10), _NANO
    if fmt is Format.BINARY_SI:
        if _exceeds_int64(magnitude, scale10):
            magnitude, scale10 = _INT64_MAX, 0
        if magnitude and _below_one(magnitude, scale10):
            fmt = Format.DECIMAL_SI
    signed = magnitude if pieces.positive else -magnitude
    return Quantity(signed, scale10, fmt)


def _round_up_to_nano(magnitude: int, scale10: int) -> int:
    cut = _NANO - scale10
    if cut > len(str(magnitude)):
        return 1  # anything non-zero below 1n becomes 1n
    divisor = _pow10(cut)
    return -(-magnitude // divisor)


def _exceeds_int64(magnitude: int, scale10: int) -> bool:
    if scale10 >= 0:
        return magnitude * _pow10(scale10) > _INT64_MAX
    return magnitude > _INT64_MAX * _pow10(-scale10)


def _below_one(magnitude: int, scale10: int) -> bool:
    return scale10 < 0 and magnitude < _pow10(-scale10)


# Go's strings.TrimSpace set (unicode.IsSpace); Python's str.strip would also eat \x1c-\x1f.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
_ESCAPED_BY_GO = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029]')


def canonical_json_quantity(value: object) -> str:
    """What a Go ``resource.Quantity`` field re-encodes a JSON value to.

    ``UnmarshalJSON`` parses the raw JSON text between the quotes without unescaping it, so any
    character the API server writes as an escape makes the quantity invalid, while surrounding
    Unicode whitespace is trimmed. Numbers arrive as the API server printed them.
    """
    if value is None:
        return "0"  # UnmarshalJSON(null) leaves the zero Quantity
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = format_float(value)
    elif isinstance(value, str):
        if _ESCAPED_BY_GO.search(value):
            raise QuantityError(f"invalid quantity {value!r}")
        text = value.strip(_GO_SPACE)
    else:
        raise QuantityError(f"invalid quantity {value!r}")
    return parse_quantity(text).canonical()


# ----- arithmetic (apimachinery's Quantity.Add / Cmp, as resource helpers use them) -----------------


def _aligned(a: Quantity, b: Quantity) -> tuple[int, int, int]:
    exponent = min(a.exponent, b.exponent)
    return a.unscaled * _pow10(a.exponent - exponent), b.unscaled * _pow10(b.exponent - exponent), exponent


def add_quantities(a: Quantity, b: Quantity) -> Quantity:
    """a + b, exact; like Go's Add the sum keeps a's format unless a is zero, and loses its text."""
    left, right, exponent = _aligned(a, b)
    fmt = b.format if a.unscaled == 0 else a.format
    return Quantity(left + right, exponent, fmt)


def compare_quantities(a: Quantity, b: Quantity) -> int:
    """-1, 0 or 1 as a is less than, equal to or greater than b."""
    left, right, _ = _aligned(a, b)
    return (left > right) - (left < right)
