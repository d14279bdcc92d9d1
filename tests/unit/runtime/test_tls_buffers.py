"""TLS read buffers: after `shrink_tls_read_buffers`, a new TLS connection reads through 16 KiB instead of
asyncio's 256 KiB, and bodies far larger than the buffer still cross it intact."""

from __future__ import annotations

import asyncio.sslproto
import os
import ssl
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from lightkube.core.exceptions import ConfigError

from leaderworkerset.api import config as api_config
from leaderworkerset.cli import manager_process
from leaderworkerset.runtime.client import ClientOptions
from leaderworkerset.runtime.metricsserver import server_ssl_context
from leaderworkerset.runtime.tlsconfig import TLS_READ_BUFFER, shrink_tls_read_buffers

MIB = 2**20


@pytest.fixture
def restored_buffer_size(monkeypatch: pytest.MonkeyPatch) -> int:
    """asyncio's own size, put back after the test (the shrink is process-wide)."""
    original: int = asyncio.sslproto.SSLProtocol.max_size
    monkeypatch.setattr(asyncio.sslproto.SSLProtocol, "max_size", original)
    return original


async def test_connections_opened_after_the_shrink_read_through_one_record_and_carry_large_bodies(
    restored_buffer_size: int,
) -> None:
    assert restored_buffer_size > TLS_READ_BUFFER, "asyncio's default is what the shrink is for"
    assert shrink_tls_read_buffers() is True
    payload = os.urandom(MIB)
    buffers: list[int] = []

    async def echo(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        buffers.append(len(transport._ssl_protocol._ssl_buffer))  # type: ignore[attr-defined]
        return web.Response(body=await request.read())

    app = web.Application(client_max_size=2 * MIB)
    app.router.add_post("/echo", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(None))
    await site.start()
    try:
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        trust_any = ssl.create_default_context()
        trust_any.check_hostname, trust_any.verify_mode = False, ssl.CERT_NONE  # loopback, own server
        connector = aiohttp.TCPConnector(ssl=trust_any)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.post(f"https://127.0.0.1:{port}/echo", data=payload) as response,
        ):
            assert response.status == 200
            assert await response.read() == payload
    finally:
        await runner.cleanup()
    assert buffers == [TLS_READ_BUFFER]


def test_without_asyncios_knob_the_shrink_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    class OtherProtocol:  # an asyncio whose SSL protocol has no max_size
        pass

    monkeypatch.setattr(asyncio.sslproto, "SSLProtocol", OtherProtocol)
    assert shrink_tls_read_buffers() is False
    assert not hasattr(OtherProtocol, "max_size")


async def test_the_manager_process_shrinks_the_buffers_before_it_loads_its_client(
    restored_buffer_size: int, tmp_path: Path
) -> None:
    """`lws manager` itself makes the shrink (not only the function works): its run fails at the first
    step that needs the cluster, loading a kubeconfig that does not exist, and by then the size is set."""
    settings = manager_process.Settings(
        config=api_config.Configuration(),
        client=ClientOptions(kubeconfig=str(tmp_path / "missing-kubeconfig")),
        namespace="lws-system",
    )
    with pytest.raises(ConfigError, match="missing-kubeconfig"):
        await manager_process.run(settings)
    assert asyncio.sslproto.SSLProtocol.max_size == TLS_READ_BUFFER != restored_buffer_size
