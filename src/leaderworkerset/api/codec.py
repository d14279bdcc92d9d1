"""Converting API objects between JSON-shaped dicts (what lightkube and the API server speak) and our
structs. ``encode(decode_x(obj))`` keeps every field of ``obj`` that upstream's CRD schema allows
(pod templates verbatim), fills in ``apiVersion``/``kind`` when missing, and drops values equal to
the Go zero value of an ``omitempty`` field (which upstream would not have written either).
"""

from typing import Any, TypeVar

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.api.disaggregatedset import DisaggregatedSet, DisaggregatedSetRoleScaler
from leaderworkerset.api.leaderworkerset import LeaderWorkerSet

T = TypeVar("T", bound=msgspec.Struct)

ApiObject = LeaderWorkerSet | DisaggregatedSet | DisaggregatedSetRoleScaler

KINDS: dict[tuple[str, str], type[ApiObject]] = {
    (c.LWS_API_VERSION, c.LWS_KIND): LeaderWorkerSet,
    (c.DS_API_VERSION, c.DS_KIND): DisaggregatedSet,
    (c.DS_API_VERSION, c.DSRS_KIND): DisaggregatedSetRoleScaler,
}


class DecodeError(ValueError):
    """The object does not have the shape of the requested type (message names the JSON path)."""


def decode(obj: dict[str, Any], typ: type[T]) -> T:
    """Decode a JSON-shaped dict (e.g. from YAML or an AdmissionReview) into ``typ``.

    Lenient like Go: unknown fields are ignored and CRD ranges are not checked here; only a wrong
    JSON type (a string where a number belongs, ...) is an error.
    """
    try:
        return msgspec.convert(obj, typ)
    except msgspec.ValidationError as err:
        raise DecodeError(str(err)) from err


def decode_lws(obj: dict[str, Any]) -> LeaderWorkerSet:
    return decode(obj, LeaderWorkerSet)


def decode_ds(obj: dict[str, Any]) -> DisaggregatedSet:
    return decode(obj, DisaggregatedSet)


def decode_dsrs(obj: dict[str, Any]) -> DisaggregatedSetRoleScaler:
    return decode(obj, DisaggregatedSetRoleScaler)


def decode_object(obj: dict[str, Any]) -> ApiObject:
    """Decode one of our kinds, chosen by the object's ``apiVersion`` and ``kind``."""
    key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    typ = KINDS.get(key)
    if typ is None:
        raise DecodeError(f"not a LeaderWorkerSet API object: apiVersion={key[0]!r} kind={key[1]!r}")
    return decode(obj, typ)


def encode(obj: msgspec.Struct) -> dict[str, Any]:
    """The JSON-shaped dict of an API struct (timestamps as RFC 3339 strings)."""
    out = msgspec.to_builtins(obj)
    if not isinstance(out, dict):
        raise TypeError(f"{type(obj).__name__} does not encode to an object")
    return out


def to_json(obj: msgspec.Struct) -> bytes:
    return msgspec.json.encode(obj)
