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
# The default "stays true" window. A negative check first waits for a positive sign that the
# controller processed the object (see `consistently`), so the window only has to outlast what that
# processing can still set in motion: a follow-up reconcile queued by its own write (watch delivery,
# the queue and a reconcile that reads caches, no API round trip before its decision) or a failing
# reconcile's retries, which back off from 5 ms doubling (client-go's rate limiter), so 2 s covers
# the first eight retries (1.3 s). Upstream holds its negatives for longer; CI can stretch the
# window with the variable.
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
    """Fail as soon as ``fn`` is falsy or raises within ``duration`` seconds.

    ``fn`` must return a truthy value (or raise): ``None`` is an error, not a pass, because a check
    that forgot its ``return`` would otherwise hold forever. Call it only after a positive sign that
    the controller under test has processed the object (an event, a status write, a created child);
    without one, the negative may hold merely because nothing has happened yet.
    """
    deadline = time.monotonic() + duration
    while True:
        value = await _call(fn)
        if value is None:
            raise TypeError(f"consistently: {fn!r} returned None; a check returns a truthy value or raises")
        assert value, f"condition stopped holding (value {value!r})"
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(interval)
