"""The HTTPS admission server: our handlers on upstream's paths, HTTP/1.1 over TLS with
the serving pair from the cert dir (`tls.crt`, `tls.key`), reloaded when the files change so a
rotated certificate is served without a restart.
"""

import asyncio
import contextlib
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import structlog
from aiohttp import hdrs, web

from leaderworkerset.api import constants as c
from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.runtime.tlsconfig import server_context
from leaderworkerset.webhooks.admission import HANDLERS, WebhookOptions, bad_request, review
from leaderworkerset.webhooks.metrics import WebhookMetrics, new_webhook_metrics

_log = structlog.get_logger(__name__)
_MAX_BODY = 16 * 1024 * 1024  # admission reviews carry whole objects; pods with big specs exist
_JSON = "application/json"
# A client that has not sent its whole body by then is answered 408 rather than holding a handler
# forever (the API server gives up on a webhook after at most 30 s anyway).
BODY_TIMEOUT = 30.0
# A connection that has not completed a request this long after it opened, or after its last
# answer, is closed: that bounds clients that dribble headers (slowloris). Longer than the idle
# timeout of Go's HTTP client (90 s) so the API server, not we, closes its idle keep-alive
# connections and never races a close with a new request.
IDLE_TIMEOUT = 120.0
# Set once the server drains (see `WebhookServer.drain`).
DRAINING = web.AppKey("draining", asyncio.Event)


class CertReloader:
    """An SSLContext whose certificate follows the files in the cert dir.

    Re-loading the chain into the same context affects new handshakes only, so connections in
    flight keep their session while new ones get the rotated certificate.
    """

    def __init__(self, cert_dir: Path, tls: TLSSettings | None = None) -> None:
        self.cert_file = cert_dir / c.TLS_CERT_FILE
        self.key_file = cert_dir / c.TLS_KEY_FILE
        # The Configuration's tls block (minimum version, cipher suites) applies here as upstream;
        # HTTP/1.1 only.
        self.context = server_context(tls)
        self._stamp: tuple[int, int, int, int] | None = None
        self.reload_if_changed()

    def _current_stamp(self) -> tuple[int, int, int, int]:
        cert, key = self.cert_file.stat(), self.key_file.stat()
        return cert.st_mtime_ns, cert.st_size, key.st_mtime_ns, key.st_size

    def reload_if_changed(self) -> bool:
        """Load the pair when the files changed since the last load; a half-written pair is
        skipped (the next poll retries) rather than taking the server down."""
        stamp = self._current_stamp()
        if stamp == self._stamp:
            return False
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except ssl.SSLError as err:
            _log.warning("webhook certificate not loadable yet", error=str(err))
            return False
        self._stamp = stamp
        _log.info("webhook certificate loaded", cert=str(self.cert_file))
        return True

    async def watch(self, stop: asyncio.Event, interval: float = 1.0) -> None:
        while not stop.is_set():
            with contextlib.suppress(FileNotFoundError):
                self.reload_if_changed()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)


def build_app(
    options: WebhookOptions | None = None,
    metrics: WebhookMetrics | None = None,
    *,
    body_timeout: float = BODY_TIMEOUT,
) -> web.Application:
    """An aiohttp application answering AdmissionReviews on every webhook path."""
    options = options or WebhookOptions()
    metrics = metrics or new_webhook_metrics()
    app = web.Application(client_max_size=_MAX_BODY)
    app[DRAINING] = asyncio.Event()
    app.on_response_prepare.append(_close_when_draining)

    def handler_for(path: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            metrics.in_flight.labels(path).inc()
            started = time.perf_counter()
            try:
                try:
                    raw = await asyncio.wait_for(request.read(), body_timeout)
                except TimeoutError:
                    raise web.HTTPRequestTimeout(text="request body not received in time") from None
                except ConnectionResetError:
                    # The client left mid-body: nobody reads an answer; not a server error.
                    _log.info("webhook client went away before sending its body", webhook=path)
                    return web.Response(status=400)
                if request.content_type != _JSON:
                    # controller-runtime's wording; the API server always sends application/json.
                    refusal = bad_request(f"contentType={request.content_type}, expected {_JSON}")
                    metrics.requests.labels(path, "400").inc()
                    return web.json_response(refusal)
                try:
                    body = msgspec.json.decode(raw)
                except (msgspec.DecodeError, RecursionError) as err:
                    body = {"error": str(err)}
                answer = review(path, body, options)
            finally:
                metrics.in_flight.labels(path).dec()
                metrics.latency.labels(path).observe(time.perf_counter() - started)
            # controller-runtime counts the admission status code, not the HTTP one (always 200).
            metrics.requests.labels(path, str(answer["response"]["status"]["code"])).inc()
            return web.Response(body=msgspec.json.encode(answer), content_type="application/json")

        return handle

    for path in HANDLERS:
        app.router.add_post(path, handler_for(path))
    return app


async def _close_when_draining(request: web.Request, response: web.StreamResponse) -> None:
    if request.app[DRAINING].is_set():
        response.force_close()  # close the connection after this answer...
        response.headers[hdrs.CONNECTION] = "close"  # ...and say so (aiohttp set its headers already)


class WebhookServer:
    """Serve the admission app over HTTPS until `stop()`; `port` 0 picks a free port."""

    def __init__(
        self,
        cert_dir: Path,
        *,
        host: str = "",
        port: int = c.DEFAULT_WEBHOOK_PORT,
        options: WebhookOptions | None = None,
        metrics: WebhookMetrics | None = None,
        reload_interval: float = 1.0,
        tls: TLSSettings | None = None,
        body_timeout: float = BODY_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self._body_timeout = body_timeout
        self._idle_timeout = idle_timeout
        self._metrics = metrics
        self._tls = tls
        self._cert_dir = cert_dir
        self._host = host or None
        self._port = port
        self._options = options
        self._reload_interval = reload_interval
        self._runner: web.AppRunner | None = None
        self._stop = asyncio.Event()
        self._watch: asyncio.Task[None] | None = None
        self.reloader: CertReloader | None = None
        self.port = port

    async def start(self) -> None:
        self.reloader = CertReloader(self._cert_dir, self._tls)
        app = build_app(self._options, self._metrics, body_timeout=self._body_timeout)
        # aiohttp's keep-alive timer also runs from the moment a connection opens, so it bounds a
        # connection that never completes its first request.
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=self._idle_timeout)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, ssl_context=self.reloader.context)
        await site.start()
        # aiohttp does not expose the bound port; read it back for port 0 (tests, dev cluster).
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._stop.clear()
        self._watch = asyncio.create_task(self.reloader.watch(self._stop, self._reload_interval))
        _log.info("webhook server listening", port=self.port)

    def drain(self) -> None:
        """Answer every call from now on with `Connection: close`, still serving.

        The API server keeps its webhook connections alive and does not retry a POST it has
        written on one that turns out closed (the pod webhook then fails closed). An answer that
        says `Connection: close` makes it close the connection itself, after reading the answer,
        instead of pooling one we are about to close. Go's http.Server (upstream's webhook server)
        answers so during its Shutdown.
        """
        if self._runner is not None:
            self._runner.app[DRAINING].set()

    async def stop(self) -> None:
        """Drain, stop listening, close the idle connections, answer the calls in flight."""
        self.drain()
        self._stop.set()
        if self._watch is not None:
            await self._watch
        if self._runner is not None:
            await self._runner.cleanup()
