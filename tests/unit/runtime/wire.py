"""A small local HTTP server that records what the client sent and answers with one scripted body:
the wire under the client's unit tests (request shapes, throttle, metrics, the cache's requests)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from lightkube import KubeConfig

from leaderworkerset.runtime.client import ClientOptions, KubeClient, client_for
from leaderworkerset.runtime.clock import FakeClock


@dataclass
class Received:
    method: str
    path: str
    content_type: str | None
    params: dict[str, str]
    body: bytes


class Recorded:
    """A local HTTP server answering every request with one status and body, and recording them."""

    def __init__(self, status: int = 200, body: dict[str, Any] | None = None) -> None:
        self.requests: list[Received] = []
        self.status = status
        self.body = body if body is not None else {"kind": "Thing"}
        self.url = ""
        # The answer to a streaming list (a watch with sendInitialEvents); None: refuse it with 422, as a
        # server with the WatchList feature gate off does.
        self.initial_events: bytes | None = None

    async def handle(self, request: web.Request) -> web.Response:
        has_body = request.method in ("POST", "PUT", "PATCH", "DELETE") and request.can_read_body
        self.requests.append(Received(
            request.method, request.path, request.headers.get("Content-Type") if has_body else None,
            dict(request.query), await request.read(),
        ))  # fmt: skip
        if request.query.get("sendInitialEvents") == "true":
            if self.initial_events is None:
                refusal = {"kind": "Status", "code": 422, "reason": "Invalid", "message": "WatchList is off"}
                return web.json_response(refusal, status=422)
            return web.Response(body=self.initial_events, content_type="application/json")
        return web.json_response(self.body, status=self.status)

    @property
    def last(self) -> Received:
        return self.requests[-1]

    def last_json(self) -> Any:
        return json.loads(self.last.body)


@asynccontextmanager
async def serving() -> AsyncIterator[Recorded]:
    server = Recorded()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    yield server
    await runner.cleanup()


def kubeconfig(server: str) -> dict[str, Any]:
    return {
        "clusters": [{"name": "test", "cluster": {"server": server}}],
        "users": [{"name": "test", "user": {"token": "t"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }


def make_client(
    recorded: Recorded, qps: float = 1000.0, burst: int = 1000, clock: FakeClock | None = None
) -> KubeClient:
    config = KubeConfig.from_dict(kubeconfig(recorded.url)).get()
    return client_for(config, ClientOptions(qps=qps, burst=burst), clock or FakeClock())
