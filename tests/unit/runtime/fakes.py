"""A scripted ListerWatcher for reflector tests: pages to list, and one script per watch call.

A streaming list (a watch asking for the initial events) takes its script from `streams`; with none
scripted, it is refused as a server with the WatchList feature off refuses it (422), so tests that
script only lists and watches run the paginated fallback."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator

from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError

WATCH_LIST_OFF = ApiStatusError(
    ApiStatus(code=422, reason="Invalid", message="sendInitialEvents is forbidden for watch unless the "
              "WatchList feature gate is enabled")
)  # fmt: skip


class FakeListerWatcher:
    def __init__(self) -> None:
        self.lists: deque[list[bytes] | Exception] = deque()
        self.watches: deque[list[bytes | Exception]] = deque()
        self.streams: deque[list[bytes | Exception]] = deque()
        self.stream_calls = 0
        self.list_calls = 0
        self.watch_rvs: list[str] = []
        self.blocked = asyncio.Event()
        self._pages: deque[bytes] = deque()

    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        if continue_token is None:
            self.list_calls += 1
            script = self.lists.popleft()
            if isinstance(script, Exception):
                raise script
            self._pages = deque(script)
        return self._pages.popleft()

    async def watch(
        self, resource_version: str, timeout_seconds: int, *, initial_events: bool = False
    ) -> AsyncGenerator[bytes, None]:
        if initial_events:
            self.stream_calls += 1
            if not self.streams:
                raise WATCH_LIST_OFF
            script = self.streams.popleft()
        else:
            self.watch_rvs.append(resource_version)
            if not self.watches:
                # Nothing scripted: behave like a quiet, open watch.
                self.blocked.set()
                await asyncio.Event().wait()
            script = self.watches.popleft()
        for item in script:
            if isinstance(item, Exception):
                raise item
            yield item


async def settle(rounds: int = 50) -> None:
    """Let ready tasks run (yields to the loop; never waits on wall-clock time)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
