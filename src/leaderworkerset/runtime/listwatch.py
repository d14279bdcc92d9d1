"""Raw list and watch calls for one resource, server-side filtered by namespace and selectors.

This talks to the API server through the HTTP client lightkube already configured (auth, TLS, QPS
throttle) but streams bytes, so the reflector decodes objects with its own codec instead of
lightkube's full models.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import httpx2
import msgspec

from leaderworkerset.runtime.errors import ApiStatusError, status_from_response
from leaderworkerset.runtime.resources import ResourceRef


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

    def watch(self, resource_version: str, timeout_seconds: int) -> AsyncGenerator[bytes, None]: ...


class HttpListerWatcher:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        resource: ResourceRef,
        namespace: str | None = None,
        options: ListOptions | None = None,
    ) -> None:
        self._http = http
        self._path = resource.collection_path(namespace)
        self._options = options or ListOptions()

    async def list_page(self, limit: int, continue_token: str | None) -> bytes:
        params = self._options.params()
        params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        response = await self._http.get(self._path, params=params)
        if response.status_code != 200:
            raise ApiStatusError(status_from_response(response.status_code, response.content))
        return response.content

    async def watch(self, resource_version: str, timeout_seconds: int) -> AsyncGenerator[bytes, None]:
        params = self._options.params()
        params.update(
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            timeoutSeconds=str(timeout_seconds),
        )
        # The server closes the stream after timeoutSeconds; the read timeout only catches a dead peer.
        timeout = httpx2.Timeout(10.0, read=timeout_seconds + 30.0)
        async with self._http.stream("GET", self._path, params=params, timeout=timeout) as response:
            if response.status_code != 200:
                raise ApiStatusError(status_from_response(response.status_code, await response.aread()))
            async for line in _lines(response.aiter_bytes()):
                yield line


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Split a watch stream into its newline-delimited JSON events without decoding to str."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
