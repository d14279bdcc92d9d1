"""Raw HTTP/1.1 over TLS to the webhook server: requests no well-behaved client library would send
(malformed framing, lying Content-Length, headers that never end)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from dataclasses import dataclass
from typing import Any


def client_context(ca: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.decode())
    context.check_hostname = False  # the serving certificate names 127.0.0.1 as an IP SAN
    return context


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def review_code(self) -> int | None:
        """The AdmissionReview status code of an HTTP-200 answer (controller-runtime answers a
        review it cannot use with HTTP 200 and a 4xx in the review), else None."""
        try:
            review: Any = json.loads(self.body)
        except ValueError:
            return None
        response = review.get("response") if isinstance(review, dict) else None
        if not isinstance(response, dict) or response.get("allowed") is not False:
            return None
        code = (response.get("status") or {}).get("code")
        return code if isinstance(code, int) else None

    def client_error(self) -> bool:
        """A 4xx answer, in the HTTP status or (HTTP 200) in the review."""
        if 400 <= self.status < 500:
            return True
        code = self.review_code()
        return self.status == 200 and code is not None and 400 <= code < 500


def request_bytes(
    path: str, body: bytes, *, method: str = "POST", content_type: str | None = "application/json"
) -> bytes:
    head = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if content_type is not None:
        head.append(f"Content-Type: {content_type}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def send(port: int, ca: bytes, raw: bytes, timeout: float) -> Answer:
    """Send `raw` and read the whole answer (the server closes after it: Connection: close)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
        # The server may close first; a failed TLS shutdown says nothing about the answer.
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2:
        raise AssertionError(f"no HTTP answer: {data[:200]!r}")
    return Answer(int(status_line[1]), body)


async def hold(port: int, ca: bytes, prefix: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a connection and send only `prefix` (partial headers or a short body), keeping it open."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(ca))
    writer.write(prefix)
    await writer.drain()
    return reader, writer
