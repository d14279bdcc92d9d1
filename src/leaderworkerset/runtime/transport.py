"""HTTP to the API server on aiohttp, whose response parser is native (llhttp), configured by lightkube.

What the connection needs comes from lightkube's kubeconfig / in-cluster loader, never from our own
parsing: the server URL, the TLS context with the cluster CA and the client certificate
(`verify_cluster`), and the Authorization header from lightkube's auth flow for the user (a static
token, a service-account token file, an exec plugin, basic auth). The header is cached until the server
answers 401; then the flow is asked again, as lightkube does after a 401 (an exec plugin runs again, a
token file is re-read), and the request is retried once.

Every request, watches included, first takes a token from the client-side QPS/burst bucket, as
client-go's rest client does, and every response is counted in `rest_client_requests_total`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

import aiohttp
import httpx2
from aiohttp.helpers import get_env_proxy_for_url
from lightkube.config.client_adapter import user_auth, verify_cluster
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ConfigError
from prometheus_client import Counter
from yarl import URL

from leaderworkerset import __version__
from leaderworkerset.runtime.errors import ApiStatusError, status_from_response
from leaderworkerset.runtime.ratelimit import TokenBucket

# httpx's pool default, which the previous transport had: watches hold one connection each.
MAX_CONNECTIONS = 100
_USER_AGENT = f"leaderworkerset/{__version__}"


class Credentials:
    """The Authorization header that lightkube's auth flow produces for a user, cached until a 401."""

    def __init__(self, auth: httpx2.Auth | None, server: str) -> None:
        self._auth = auth
        self._server = server
        self._header: str | None = None
        self._asked = False
        self._lock = asyncio.Lock()
        self.refreshes = 0  # observable, for tests and logs

    async def header(self) -> str | None:
        if not self._asked:
            async with self._lock:
                if not self._asked:
                    self._header = await self._ask(after_unauthorized=False)
                    self._asked = True
        return self._header

    async def refresh(self, rejected: str | None) -> bool:
        """After the server rejected `rejected` with 401: a new header, if the flow has one."""
        async with self._lock:
            if self._header != rejected:
                return True  # a concurrent request already refreshed it
            fresh = await self._ask(after_unauthorized=True)
            changed = fresh != self._header
            self._header = fresh
            self.refreshes += 1
            return changed

    async def _ask(self, *, after_unauthorized: bool) -> str | None:
        """Run lightkube's flow on a probe request, answering 401 when asked to refresh."""
        if self._auth is None:
            return None
        flow = self._auth.async_auth_flow(httpx2.Request("GET", self._server))
        try:
            sent = await flow.__anext__()
            if after_unauthorized:
                # A flow that has nothing to refresh (a static token) simply ends here.
                with contextlib.suppress(StopAsyncIteration):
                    sent = await flow.asend(httpx2.Response(401, request=sent))
        finally:
            await flow.aclose()
        header = sent.headers.get("Authorization")
        return str(header) if header is not None else None


class Transport:
    """One aiohttp session to one API server, shared by every request, list and watch."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | None,
        credentials: Credentials,
        bucket: TokenBucket,
        timeout: float,
    ) -> None:
        self.server = server.rstrip("/")
        self.host = URL(self.server).raw_authority  # the metric's host label, as client-go's
        self.credentials = credentials
        self._ssl = ssl_context
        self._bucket = bucket
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        self._proxy, self._proxy_auth = env_proxy(self.server)
        self._session: aiohttp.ClientSession | None = None
        self._requests_total: Counter | None = None

    @classmethod
    def from_config(cls, config: SingleConfig, bucket: TokenBucket, timeout: float) -> Transport:
        server, user = str(config.cluster.server), config.user
        if user is None:
            raise ConfigError("the configuration's context names no user")
        context = (
            verify_cluster(config.cluster, user, config.abs_file) if server.startswith("https") else None
        )
        return cls(server, context, Credentials(user_auth(user), server), bucket, timeout)

    def instrument(self, requests_total: Counter) -> None:
        """Count every response in `rest_client_requests_total{code,method,host}` (client-go's metric)."""
        self._requests_total = requests_total

    def _http(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the event loop it was created in.
        if self._session is None:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False,
                                             limit=MAX_CONNECTIONS)  # fmt: skip
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                headers={"Accept": "application/json", "User-Agent": _USER_AGENT},
                # No trust_env: it makes aiohttp look up the proxy and ~/.netrc in a worker thread on
                # every request; the proxy is read once instead (env_proxy), and netrc never applied.
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _count(self, status: int, method: str) -> None:
        if self._requests_total is not None:
            self._requests_total.labels(str(status), method, self.host).inc()

    @contextlib.asynccontextmanager
    async def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: bytes | None,
        content_type: str | None,
        timeout: aiohttp.ClientTimeout | None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        await self._bucket.wait()
        headers = {"Content-Type": content_type} if content_type else {}
        url = self.server + path
        for attempt in (1, 2):
            authorization = await self.credentials.header()
            if authorization is not None:
                headers["Authorization"] = authorization
            extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
            if self._proxy is not None:
                extra.update(proxy=self._proxy, proxy_auth=self._proxy_auth)
            async with self._http().request(
                method, url, params=params, data=body, headers=headers, **extra
            ) as response:
                self._count(response.status, method)
                if response.status == 401 and attempt == 1 and await self.credentials.refresh(authorization):
                    continue
                yield response
                return

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> tuple[int, bytes]:
        """Status and body (the bytes as received: callers decode them with msgspec)."""
        async with self._send(method, path, params, body, content_type, None) as response:
            return response.status, await response.read()

    async def checked(self, method: str, path: str, **kw: Any) -> bytes:
        """The body of a 2xx answer; any other raises ApiStatusError with the server's Status."""
        status, data = await self.request(method, path, **kw)
        if status >= 300:
            raise ApiStatusError(status_from_response(status, data))
        return data

    async def stream(
        self, path: str, params: Mapping[str, str], read_timeout: float
    ) -> AsyncGenerator[bytes, None]:
        """The newline-delimited events of a watch, each as bytes (not decoded to str)."""
        # The server closes the stream after timeoutSeconds; the read timeout only catches a dead peer.
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self._timeout.sock_connect, sock_read=read_timeout
        )
        async with self._send("GET", path, params, None, None, timeout) as response:
            if response.status != 200:
                raise ApiStatusError(status_from_response(response.status, await response.read()))
            async for line in lines(response.content.iter_any()):
                yield line


def env_proxy(server: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy HTTPS_PROXY / HTTP_PROXY name for the API server unless NO_PROXY exempts it, read
    from the environment once, as client-go's transport and lightkube's httpx client apply them."""
    try:
        return get_env_proxy_for_url(URL(server))
    except LookupError:
        return None, None


async def lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Split a stream into its newline-delimited JSON documents without decoding to str. A large
    object arrives in many chunks; the buffer grows in place instead of being copied per chunk."""
    pending = bytearray()
    async for chunk in chunks:
        start = len(pending)
        pending += chunk
        end = pending.find(b"\n", start)
        if end < 0:
            continue
        begin = 0
        while end >= 0:
            if end > begin:
                yield bytes(pending[begin:end])
            begin = end + 1
            end = pending.find(b"\n", begin)
        del pending[:begin]
    if pending.strip():
        yield bytes(pending)
