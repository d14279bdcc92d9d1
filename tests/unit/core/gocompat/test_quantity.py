"""Quantities re-encode exactly as apimachinery's resource.Quantity does.

Golden rows come from apimachinery itself (tests/oracle: UnmarshalJSON then MarshalJSON of the raw
JSON text), including ~400 seeded random spellings; the table below names the rules.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderworkerset.core.gocompat.gojson import loads
from leaderworkerset.core.gocompat.quantity import QuantityError, canonical_json_quantity, parse_quantity
from tests.unit.core.golden import golden


def golden_rows() -> list[Any]:
    rows = golden()["quantities"]
    return [
        pytest.param(row["input"], row["want"], id=f"{index}:{row['input']}")
        for index, row in enumerate(rows)
    ]


@pytest.mark.parametrize(("raw", "want"), golden_rows())
def test_matches_apimachinery(raw: str, want: dict[str, Any]) -> None:
    value = loads(raw)
    if "error" in want:
        with pytest.raises(QuantityError):
            canonical_json_quantity(value)
        return
    assert canonical_json_quantity(value) == json.loads(want["json"])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("1000m", "1", id="milli to whole"),
        pytest.param("0.5", "500m", id="fraction to milli"),
        pytest.param("1Gi", "1Gi", id="canonical binary kept"),
        pytest.param("1024Mi", "1Gi", id="binary promoted"),
        pytest.param("1.5Gi", "1536Mi", id="fractional binary"),
        pytest.param("0.1Ki", "102400m", id="small binary shown as decimal"),
        pytest.param("1e3", "1e3", id="canonical exponent kept verbatim"),
        pytest.param("1e2", "100", id="exponent not a multiple of three"),
        pytest.param("+1", "+1", id="sign kept verbatim"),
        pytest.param("0.0000000001", "1n", id="rounded up to nano"),
        pytest.param("-0.0000000001", "-1n", id="rounded away from zero"),
        pytest.param("8Ei", "9223372036854775807", id="binary capped at int64"),
        pytest.param("1000E", "1", id="beyond the SI table the suffix is lost (as in Go)"),
        pytest.param("1.Gi", "1.Gi", id="odd but canonical text kept"),
        pytest.param("Gi", "0", id="no digits is zero"),
    ],
)
def test_rules(text: str, want: str) -> None:
    assert parse_quantity(text).canonical() == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(2, "2", id="integer number"),
        pytest.param(0.25, "250m", id="float number"),
        pytest.param(None, "0", id="null is the zero quantity"),
        pytest.param("\u00a02Gi", "2Gi", id="unicode space trimmed"),
    ],
)
def test_json_values(value: Any, want: str) -> None:
    assert canonical_json_quantity(value) == want


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("1ki", id="unknown suffix"),
        pytest.param("1\t", id="escaped whitespace is not trimmed"),
        pytest.param("1 Gi", id="inner space"),
        pytest.param(True, id="boolean"),
        pytest.param([1], id="array"),
    ],
)
def test_invalid(value: Any) -> None:
    with pytest.raises(QuantityError):
        canonical_json_quantity(value)


quantity_texts = st.builds(
    lambda sign, whole, frac, suffix: sign + whole + frac + suffix,
    st.sampled_from(["", "-", "+"]),
    st.text("0123456789", max_size=22),
    st.one_of(st.just(""), st.text("0123456789", max_size=12).map(lambda digits: "." + digits)),
    st.sampled_from(
        ["", "m", "k", "M", "G", "T", "P", "E", "n", "u", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-6"]
    ),
)


@settings(derandomize=True, deadline=None, max_examples=500)
@given(quantity_texts)
def test_canonical_text_is_stable(text: str) -> None:
    try:
        canonical = parse_quantity(text).canonical()
    except QuantityError:
        return
    assert parse_quantity(canonical).canonical() == canonical
