"""The load client records every request, and a request cut off mid-answer is a failed one, never the
end of the client (found measuring upstream's drain: an answer cut short killed a client thread, and
its failures went uncounted)."""

from __future__ import annotations

import io
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support import loadclient


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/cut":  # promises 100 bytes, sends 2, closes
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"{}")
            self.close_connection = True
            return
        data = b'{"version": "v1"}'
        self.send_response(200 if self.path == "/ok" else 503)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


CASES = [("/ok", True, 200, ""), ("/busy", False, 503, ""), ("/cut", False, 0, "IncompleteRead")]


@pytest.mark.parametrize(("path", "ok", "status", "error"), CASES)
def test_each_request_is_recorded_with_its_outcome(
    server: str, path: str, ok: bool, status: int, error: str
) -> None:
    record = loadclient.once(server + path)
    assert (record["ok"], record["status"]) == (ok, status)
    assert record["error"].startswith(error)


def test_the_client_goes_on_after_an_answer_cut_short(server: str) -> None:
    out = io.StringIO()
    previous = signal.getsignal(signal.SIGTERM)  # the client takes SIGTERM as its stop
    try:
        loadclient.run(server + "/cut", out, workers=2, count=6)
    finally:
        signal.signal(signal.SIGTERM, previous)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 6
    assert all('"ok": false' in line for line in lines)


def test_the_cases_ran() -> None:
    assert len(CASES) == 3
