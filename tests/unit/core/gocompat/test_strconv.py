"""Go's strconv.Atoi and integer division as upstream computes them."""

import pytest

from leaderworkerset.core.gocompat import strconv


@pytest.mark.parametrize(
    ("numerator", "denominator", "quotient", "remainder"),
    [
        pytest.param(7, 2, 3, 1, id="positive"),
        pytest.param(-1, 4, 0, -1, id="negative numerator truncates toward zero"),
        pytest.param(-7, 2, -3, -1, id="negative quotient"),
    ],
)
def test_go_integer_division(numerator: int, denominator: int, quotient: int, remainder: int) -> None:
    assert strconv.go_div(numerator, denominator) == quotient
    assert strconv.go_mod(numerator, denominator) == remainder


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("12", 12, id="digits"),
        pytest.param("+3", 3, id="plus sign"),
        pytest.param("-3", -3, id="minus sign"),
    ],
)
def test_go_atoi_accepts(text: str, want: int) -> None:
    assert strconv.go_atoi(text) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", 'strconv.Atoi: parsing "": invalid syntax', id="empty"),
        pytest.param("1.5", 'strconv.Atoi: parsing "1.5": invalid syntax', id="decimal"),
        pytest.param(" 1", 'strconv.Atoi: parsing " 1": invalid syntax', id="space"),
        pytest.param("9" * 20, f'strconv.Atoi: parsing "{"9" * 20}": value out of range', id="overflow"),
    ],
)
def test_go_atoi_rejects_with_go_message(text: str, message: str) -> None:
    with pytest.raises(strconv.GoParseError) as raised:
        strconv.go_atoi(text)
    assert str(raised.value) == message
