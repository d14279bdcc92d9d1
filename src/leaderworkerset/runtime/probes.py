"""Liveness and readiness endpoints (/healthz, /readyz on :8081 by default) with pluggable checks.

A check is an async or sync callable returning None/True when healthy; returning False or raising
marks it failed. The response lists failures as `[-]name failed: reason`, like controller-runtime's
healthz handler, and `?verbose` lists every check.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

Check = Callable[[], Awaitable[bool | None] | bool | None]


def ping() -> bool:
    return True


async def _run(check: Check) -> str | None:
    """None when healthy, else the reason."""
    try:
        result = check()
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # a failing check is a probe failure, not a server error
        return str(exc) or type(exc).__name__
    return None if result is None or result is True else "check returned false"


@dataclass
class CheckSet:
    checks: dict[str, Check] = field(default_factory=dict)

    def add(self, name: str, check: Check) -> None:
        if name in self.checks:
            raise ValueError(f"check {name!r} already registered")
        self.checks[name] = check

    async def handle(self, request: web.Request) -> web.Response:
        lines: list[str] = []
        failed = False
        for name, check in self.checks.items():
            reason = await _run(check)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason}")
        if failed:
            return web.Response(status=500, text="\n".join([*lines, "healthz check failed"]) + "\n")
        if "verbose" in request.query:
            return web.Response(text="\n".join([*lines, "healthz check passed"]) + "\n")
        return web.Response(text="ok")


def probe_app(
    liveness: CheckSet, readiness: CheckSet, liveness_path: str, readiness_path: str
) -> web.Application:
    app = web.Application()
    app.router.add_get(liveness_path, liveness.handle)
    app.router.add_get(readiness_path, readiness.handle)
    return app
