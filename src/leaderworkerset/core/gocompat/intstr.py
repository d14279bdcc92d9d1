"""apimachinery's IntOrString scaling, in one place for the rollout arithmetic and admission."""

from __future__ import annotations

from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi

IntOrString = int | str


class IntOrPercentError(ValueError):
    """An IntOrString that is neither an int nor `<int>%`, worded like apimachinery's error."""


def scaled_value(value: IntOrString, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: ints as they are, `N%` of `total` rounded up or down."""
    if isinstance(value, bool):
        raise IntOrPercentError("invalid value for IntOrString: invalid type: neither int nor percentage")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise IntOrPercentError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = go_atoi(value[:-1])
    except GoParseError as err:
        raise IntOrPercentError(f'invalid value for IntOrString: invalid value "{value}": {err}') from err
    # Integer ceil/floor of percent*total/100. Go computes it in float64, which gives the same
    # integers: the product is exact below 2**53, and a quotient with a non-zero fraction is at
    # least 0.01 away from the next integer, far more than float64's error.
    scaled = percent * total
    return -(-scaled // 100) if round_up else scaled // 100
