"""Polling with deadlines instead of sleeps.

``eventually`` retries a check until it passes or the deadline expires;
``consistently`` asserts that a check keeps passing for a window. Both take
sync or async callables that either return a truthy value or raise
AssertionError. The timeouts are central so that CI can stretch them and the
"stays true" windows (two minutes upstream) stay short by default.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT = float(os.environ.get("LWS_TEST_TIMEOUT", "30"))
LONG_TIMEOUT = float(os.environ.get("LWS_TEST_LONG_TIMEOUT", "120"))
CONSISTENTLY = float(os.environ.get("LWS_TEST_CONSISTENTLY", "2"))
INTERVAL = 0.1


async def _call(fn: Callable[[], Any]) -> Any:
    result = fn()
    if inspect.isawaitable(result):
        result = await result
    return result


async def eventually(
    fn: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = TIMEOUT,
    interval: float = INTERVAL,
    message: str = "",
) -> T:
    """Return ``fn()``'s first truthy result; fail with the last error after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    value: Any = None
    while True:
        try:
            value = await _call(fn)
            if value:
                return value  # type: ignore[no-any-return]
            last = None
        except AssertionError as err:
            last = err
        if time.monotonic() >= deadline:
            detail = f": {last}" if last else f" (last value {value!r})"
            raise AssertionError(f"condition not met within {timeout:.0f}s{detail} {message}".rstrip())
        await asyncio.sleep(interval)


async def consistently(
    fn: Callable[[], Any],
    *,
    duration: float = CONSISTENTLY,
    interval: float = INTERVAL,
) -> None:
    """Fail as soon as ``fn`` is falsy or raises within ``duration`` seconds."""
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        value = await _call(fn)
        assert value or value is None, f"condition stopped holding (value {value!r})"
        await asyncio.sleep(interval)
