"""Every request a controller's KubeClient sends, as (method, path, query), for tests that count
API calls of a kind (e.g. that a step reads the caches instead of LISTing per reconcile).

Recorded on the client's transport, below every read and write helper and the informers' paginated
LISTs; watch streams are not requests here (they stay open)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import ResourceRef

Request = tuple[str, str, dict[str, str]]


class RequestLog:
    def __init__(self, client: KubeClient) -> None:
        self.requests: list[Request] = []
        transport = client.transport
        send = transport.request

        async def request(
            method: str, path: str, *, params: Mapping[str, str] | None = None, **kw: Any
        ) -> tuple[int, bytes]:
            self.requests.append((method, path, dict(params or {})))
            return await send(method, path, params=params, **kw)

        transport.request = request  # type: ignore[method-assign]

    def mark(self) -> int:
        """A position in the log, for `lists(..., since=)`."""
        return len(self.requests)

    def lists(self, ref: ResourceRef, *, since: int = 0) -> list[Request]:
        """The LISTs of `ref` (any namespace, any selector) sent after position `since`."""
        return [
            (method, path, params)
            for method, path, params in self.requests[since:]
            if method == "GET" and path.endswith(f"/{ref.plural}") and params.get("watch") != "true"
        ]
