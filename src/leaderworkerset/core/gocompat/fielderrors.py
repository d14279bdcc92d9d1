"""Field errors rendered exactly as apimachinery's `field.Error` / `ErrorList.ToAggregate()` render
them, plus the generic validators the webhooks share (IntOrString percent rules, DNS labels,
ObjectMeta names).

Admission denials quote these strings verbatim, and upstream users grep for them, so the wording,
the value rendering (`%v`, `%q`, `%#v`) and the aggregate form (`[a, b]`) follow Go.

"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api.names import is_dns1035_label, is_dns1123_label, regex_error
from leaderworkerset.core.gocompat.intstr import IntOrPercentError


class ErrorType(enum.Enum):
    """apimachinery's field.ErrorType, valued by its String() form."""

    NOT_FOUND = "Not found"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    INTERNAL = "Internal error"


# Types whose body never shows the bad value.
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


@dataclass(frozen=True)
class FieldError:
    """One rejected field: its JSON path, the rule that failed, and Go's rendering of the bad value.

    `rule` is our own stable identifier for the check (tests and metrics use it); it is not shown.
    `value` is the already-rendered Go representation, or None when the error shows no value.
    """

    type: ErrorType
    field: str
    rule: str
    detail: str = ""
    value: str | None = None

    def body(self) -> str:
        text = self.type.value
        if self.type not in _VALUELESS and self.value is not None:
            text = f"{text}: {self.value}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def error(self) -> str:
        return f"{self.field}: {self.body()}"


def aggregate_message(errors: list[FieldError]) -> str:
    """ErrorList.ToAggregate().Error(): duplicates dropped, several wrapped in `[... , ...]`."""
    messages: list[str] = []
    for err in errors:
        if err.error() not in messages:
            messages.append(err.error())
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


GO_NULL = "null"


def go_quote(text: str) -> str:
    """strconv.Quote: double quotes, Go escapes for control characters, printable runes kept."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_SHORT_ESCAPES:
            out.append(_GO_SHORT_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x10000:
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


_GO_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_int(value: int | None) -> str:
    """A (possibly nil) *int32 / int64 bad value."""
    return GO_NULL if value is None else str(value)


def go_string(value: str | None) -> str:
    """A plain string (`%q`) or a named string type (`%#v`); both print Go-quoted."""
    return GO_NULL if value is None else go_quote(value)


def go_int_or_string(value: int | str) -> str:
    """An intstr.IntOrString value: its String() has a pointer receiver, so Go falls back to `%#v`."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def invalid(path: str, value: str, detail: str, rule: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, rule, detail, value)


def required(path: str, detail: str, rule: str) -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, rule, detail)


def forbidden(path: str, detail: str, rule: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, rule, detail)


def not_supported(path: str, value: str, supported: list[str], rule: str) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, path, rule, detail, value)


def immutable(path: str, value: str, rule: str) -> FieldError:
    """apivalidation.ValidateImmutableField's error."""
    return invalid(path, value, "field is immutable", rule)


_PERCENT_FMT = "[0-9]+%"


_PERCENT = re.compile(r"[0-9]+%\Z")


PERCENT_MESSAGE = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", _PERCENT_FMT, "1%", "93%"
)


def is_valid_percent(text: str) -> bool:
    return _PERCENT.match(text) is not None


def validate_nonnegative(value: int, path: str, rule: str) -> list[FieldError]:
    if value < 0:
        return [invalid(path, str(value), "must be greater than or equal to 0", rule)]
    return []


def validate_positive_int_or_percent(value: int | str, path: str, rule: str) -> list[FieldError]:
    """An int ≥ 0, or a string matching `[0-9]+%`."""
    if isinstance(value, str):
        if is_valid_percent(value):
            return []
        return [invalid(path, go_int_or_string(value), PERCENT_MESSAGE, rule)]
    if value < 0:
        return [invalid(path, go_int_or_string(value), "must be greater than or equal to 0", rule)]
    return []


def validate_not_more_than_100_percent(value: int | str, path: str, rule: str) -> list[FieldError]:
    if not isinstance(value, str) or not is_valid_percent(value) or int(value[:-1]) <= 100:
        return []
    return [invalid(path, go_int_or_string(value), "must not be greater than 100%", rule)]


# The name the webhooks first caught; the scaling and its error live in core.gocompat.intstr.
ScaleError = IntOrPercentError


def _mask_trailing_dash(name: str) -> str:
    # A generateName prefix may end in '-': the random suffix follows it.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_object_meta_names(meta: dict[str, Any], path: str, rule_prefix: str) -> list[FieldError]:
    """The name/generateName/namespace part of apivalidation.ValidateObjectMeta with a DNS-1035 name."""
    errors: list[FieldError] = []
    generate_name = str(meta.get("generateName") or "")
    if generate_name:
        for message in is_dns1035_label(_mask_trailing_dash(generate_name)):
            errors.append(
                invalid(f"{path}.generateName", go_quote(generate_name), message, f"{rule_prefix}-name")
            )
    name = str(meta.get("name") or "")
    if not name:
        errors.append(required(f"{path}.name", "name or generateName is required", f"{rule_prefix}-name"))
    else:
        for message in is_dns1035_label(name):
            errors.append(invalid(f"{path}.name", go_quote(name), message, f"{rule_prefix}-name"))
    namespace = str(meta.get("namespace") or "")
    if not namespace:
        errors.append(required(f"{path}.namespace", "", f"{rule_prefix}-namespace"))
    else:
        for message in is_dns1123_label(namespace):
            errors.append(
                invalid(f"{path}.namespace", go_quote(namespace), message, f"{rule_prefix}-namespace")
            )
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errors += validate_nonnegative(generation, f"{path}.generation", f"{rule_prefix}-generation")
    return errors
