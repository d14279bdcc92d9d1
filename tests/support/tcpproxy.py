"""A tiny TCP proxy on 127.0.0.1 for fault tests: a load balancer in front of several replicas, or a
wire between a client and the API server that can be cut.

    proxy = TcpProxy([backend_port, other_port])
    await proxy.start()          # proxy.port now accepts connections
    proxy.cut()                  # reset every open connection (both sides see ECONNRESET)
    proxy.refuse = True          # new connections are reset at once (a partition) until set back
    await proxy.stop()

Each new connection goes to the first backend that accepts it, starting one further along each time
(round robin; with ``round_robin = False`` always from the first), so a dead backend (connection
refused) is skipped: what a Service does in front of the ready endpoints. TLS passes through untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct


class TcpProxy:
    def __init__(self, backends: list[int], port: int = 0) -> None:
        self.backends = list(backends)
        self._port = port
        self.refuse = False
        self.round_robin = True
        self.accepted = 0
        self.cuts = 0  # connections reset by cut()
        self.served: dict[int, int] = dict.fromkeys(backends, 0)  # connections per backend
        self._next = 0
        self._server: asyncio.Server | None = None
        self._live: set[asyncio.StreamWriter] = set()
        self._live_backend: dict[asyncio.StreamWriter, int] = {}  # client side -> backend port
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None, "proxy not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    def live_to(self, port: int) -> int:
        """Open connections forwarded to backend ``port``."""
        return sum(1 for backend in self._live_backend.values() if backend == port)

    def cut(self) -> int:
        """Reset every open connection (RST, not FIN: the peer sees a broken connection)."""
        count = 0
        for writer in list(self._live):
            _reset(writer)
            count += 1
        self._live.clear()
        self._live_backend.clear()
        self.cuts += count
        return count

    async def cut_at_random(self, rng: random.Random, low: float, high: float, times: int) -> list[int]:
        """Cut ``times`` times, a seeded uniform [low, high) seconds apart; the open connections each time."""
        cut = []
        for _ in range(times):
            await asyncio.sleep(rng.uniform(low, high))
            cut.append(self.cut())
        return cut

    async def _connect(self) -> tuple[int, asyncio.StreamReader, asyncio.StreamWriter] | None:
        start = self._next if self.round_robin else 0
        for offset in range(len(self.backends)):
            port = self.backends[(start + offset) % len(self.backends)]
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue
            self._next = (start + offset + 1) % len(self.backends)
            self.served[port] = self.served.get(port, 0) + 1
            return port, reader, writer
        return None

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        backend = None if self.refuse else await self._connect()
        if backend is None:
            _reset(client_writer)
            return
        port, reader, writer = backend
        pair = {client_writer, writer}
        self._live |= pair
        self._live_backend[client_writer] = port
        pumps = [
            asyncio.create_task(_pump(client_reader, writer)),
            asyncio.create_task(_pump(reader, client_writer)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pumps:
                task.cancel()
                self._tasks.discard(task)
            self._live_backend.pop(client_writer, None)
            for end in pair:
                self._live.discard(end)
                end.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    if not writer.is_closing():
        with contextlib.suppress(OSError):
            writer.write_eof()


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
