"""The override tables name real model fields, so an API rename cannot silently drop a marker."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import msgspec.inspect as mi
import pytest

from leaderworkerset.crd.builder import model_description
from leaderworkerset.crd.definitions import ALL_CRDS
from leaderworkerset.crd.descriptions import DESCRIPTIONS
from leaderworkerset.crd.markers import MARKERS


def _structs(t: mi.Type) -> Iterator[type[msgspec.Struct]]:
    if isinstance(t, mi.StructType):
        yield t.cls
    for attribute in ("type", "item_type", "value_type"):
        inner = getattr(t, attribute, None)
        if isinstance(inner, mi.Type):
            yield from _structs(inner)
    if isinstance(t, mi.UnionType):
        for member in t.types:
            yield from _structs(member)


def _model_fields(*, undescribed_only: bool = False) -> set[tuple[str, str]]:
    """(StructName, json field) and (StructName, "") for every struct reachable from the CRD roots."""
    found: set[tuple[str, str]] = set()
    pending: list[type[msgspec.Struct]] = [spec.root for spec in ALL_CRDS]
    seen: set[type[msgspec.Struct]] = set()
    while pending:
        cls = pending.pop()
        if cls in seen or cls.__module__.startswith("lightkube."):
            continue
        seen.add(cls)
        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        found.add((cls.__name__, ""))
        for field in info.fields:
            if not (undescribed_only and model_description(field.type)):
                found.add((cls.__name__, field.encode_name))
            pending.extend(_structs(field.type))
    return found


@pytest.mark.parametrize(
    ("table", "keys"),
    [
        pytest.param("markers", set(MARKERS), id="markers"),
        pytest.param("descriptions", set(DESCRIPTIONS), id="descriptions"),
    ],
)
def test_table_keys_are_model_fields(table: str, keys: set[tuple[str, str]]) -> None:
    assert keys - _model_fields() == set(), f"{table} names fields the models do not have"


def test_every_model_field_has_a_description() -> None:
    """For `kubectl explain`: in crd/descriptions.py, or on the model via crd(description=...)."""
    structural = {"apiVersion", "kind", "metadata"}
    fields = {key for key in _model_fields(undescribed_only=True) if key[1] and key[1] not in structural}
    assert fields - set(DESCRIPTIONS) == set()
