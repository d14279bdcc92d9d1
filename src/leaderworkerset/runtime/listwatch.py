"""Raw list and watch calls for one resource, server-side filtered by namespace and selectors.

They go through the client's transport (auth, TLS, QPS throttle) and hand the reflector bytes, which
it decodes with its own codec. A watch may ask for the initial events (a streaming list: every object
as ADDED, then a bookmark annotated `k8s.io/initial-events-end`), which needs resourceVersionMatch
NotOlderThan; servers with the WatchList feature off refuse it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

import msgspec

from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.transport import Transport


class WatchEvent(msgspec.Struct):
    type: str
    object: msgspec.Raw


@dataclass(frozen=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None

    def params(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.label_selector:
            out["labelSelector"] = self.label_selector
        if self.field_selector:
            out["fieldSelector"] = self.field_selector
        return out


class ListerWatcher(Protocol):
    """What the reflector needs from the API server; faked in unit tests."""

    async def list_page(self, limit: int, continue_token: str | None) -> bytes: ...

    def watch(
        self, resource_version: str, timeout_seconds: int, *, initial_events: bool = False
    ) -> AsyncGenerator[bytes, None]: ...


class HttpListerWatcher:
    def __init__(
        self,
        transport: Transport,
        resource: ResourceRef,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> None:
        self._transport = transport
        self._path = resource.collection_path(namespace)
        self._options = options or ListOptions()

    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        params = self._options.params()
        params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        return await self._transport.checked("GET", self._path, params=params)

    def watch(
        self, resource_version: str, timeout_seconds: int, *, initial_events: bool = False
    ) -> AsyncGenerator[bytes, None]:
        params = self._options.params()
        params.update(
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            timeoutSeconds=str(timeout_seconds),
        )
        if initial_events:
            params.update(sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
        return self._transport.stream(self._path, params, timeout_seconds + 30.0)
