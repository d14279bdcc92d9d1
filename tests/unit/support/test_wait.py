"""`eventually` and `consistently`: neither can be fooled by a check that returns nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.wait import consistently, eventually


@dataclass(frozen=True)
class Case:
    values: tuple[Any, ...]  # what the check returns on successive calls (the last one repeats)
    want_error: type[BaseException] | None


def returning(*values: Any) -> Callable[[], Any]:
    calls = iter(values)
    last: list[Any] = [None]

    def check() -> Any:
        last[0] = next(calls, last[0])
        if isinstance(last[0], BaseException):
            raise last[0]
        return last[0]

    return check


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case((True,), None), id="truthy throughout holds"),
        pytest.param(Case((None,), TypeError), id="None is an error, not a pass"),
        pytest.param(Case((True, True, None), TypeError), id="None later is an error too"),
        pytest.param(Case((True, False), AssertionError), id="falsy fails"),
        pytest.param(Case((True, AssertionError("gone")), AssertionError), id="assertion fails"),
    ],
)
async def test_consistently(case: Case) -> None:
    check = returning(*case.values)
    if case.want_error is None:
        await consistently(check, duration=0.05, interval=0.01)
    else:
        # A window far longer than the calls needed: the failure ends it, however slow the machine.
        with pytest.raises(case.want_error):
            await consistently(check, duration=60, interval=0.01)


async def test_consistently_checks_at_least_once_even_with_no_window() -> None:
    calls: list[int] = []

    def check() -> bool:
        calls.append(1)
        return True

    await consistently(check, duration=0, interval=0.01)
    assert calls == [1]


async def test_eventually_returns_the_first_truthy_value() -> None:
    assert await eventually(returning(None, 0, AssertionError("not yet"), "done"), interval=0) == "done"


async def test_eventually_fails_with_the_last_error() -> None:
    with pytest.raises(AssertionError, match="still missing"):
        await eventually(returning(AssertionError("still missing")), timeout=0.05, interval=0.01)
