"""Field-error rendering and the generic validators, mirroring apimachinery and upstream's helpers."""

import pytest

from leaderworkerset.core.gocompat import fielderrors as v


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(1, [], id="int is not a percentage"),
        pytest.param("1", [], id="malformed percentage is left to the format rule"),
        pytest.param(
            "101%",
            [
                'test: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"101%"}: '
                "must not be greater than 100%"
            ],
            id="101%",
        ),
        pytest.param("99%", [], id="99%"),
        pytest.param("100%", [], id="100%"),
    ],
)
def test_not_more_than_100_percent(value: int | str, want: list[str]) -> None:
    assert [err.error() for err in v.validate_not_more_than_100_percent(value, "test", "r")] == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(-1, ["test: Invalid value: -1: must be greater than or equal to 0"], id="negative"),
        pytest.param(0, [], id="zero"),
        pytest.param(1, [], id="positive"),
    ],
)
def test_nonnegative(value: int, want: list[str]) -> None:
    assert [err.error() for err in v.validate_nonnegative(value, "test", "r")] == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("plain", '"plain"', id="plain"),
        pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quotes and backslashes"),
        pytest.param("tab\there\n", '"tab\\there\\n"', id="control characters"),
        pytest.param("\x01", '"\\x01"', id="other control"),
        pytest.param("héllo", '"héllo"', id="printable unicode kept"),
    ],
)
def test_go_quote(text: str, want: str) -> None:
    assert v.go_quote(text) == want


def test_aggregate_drops_duplicates_and_unwraps_a_single_error() -> None:
    one = v.invalid("a", "1", "bad", "r")
    other = v.forbidden("b", "no", "r")
    assert v.aggregate_message([one, one]) == "a: Invalid value: 1: bad"
    assert v.aggregate_message([one, other, one]) == "[a: Invalid value: 1: bad, b: Forbidden: no]"


def test_valueless_error_types_hide_the_value() -> None:
    assert v.required("spec.x", "is required", "r").error() == "spec.x: Required value: is required"
    assert (
        v.not_supported("t", '"X"', ["A", ""], "r").error()
        == 't: Unsupported value: "X": supported values: "A", ""'
    )


def test_dns1035_label_messages() -> None:
    assert v.is_dns1035_label("a" * 64)[0] == "must be no more than 63 characters"
    assert v.is_dns1035_label("ok-name") == []
