"""Bad requests sent straight to the webhook server's TLS port.

Every malformed request gets a 4xx answer (HTTP 4xx, or controller-runtime's HTTP 200 with a 4xx
review), never a 5xx or no answer; clients that hold connections open with partial headers or
bodies do not stall the API server's admissions, and the server drops them after its limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.server import WebhookServer
from tests.chaos import sizes
from tests.chaos.input import rawhttp
from tests.support.builders import LeaderWorkerSetBuilder, leader, lws
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster
Obj = dict[str, Any]
# The API server's webhook timeout in the registered configurations (tests/integration/webhooks):
# a well-formed request answered later than this fails its admission.
WEBHOOK_TIMEOUT = 10.0
SLOW_CLIENTS = sizes.pick(ci=40, full=400)
ADMISSIONS_WHILE_HELD = sizes.pick(ci=20, full=200)


def review(obj: Obj | None, **envelope: Any) -> bytes:
    body: Obj = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    body["request"] = {"uid": "u", "operation": "CREATE", "object": obj}
    body.update(envelope)
    return json.dumps(body).encode()


def nested(depth: int) -> bytes:
    return b'{"request": ' + b"[" * depth + b"]" * depth + b"}"


@dataclass(frozen=True)
class Abuse:
    raw: bytes


def post(path: str, body: bytes, **kwargs: Any) -> Abuse:
    return Abuse(rawhttp.request_bytes(path, body, **kwargs))


LWS_PATH = c.WEBHOOK_PATH_VALIDATE_LWS
POD_PATH = c.WEBHOOK_PATH_MUTATE_POD
BAD_POD = {**leader().obj(), "metadata": {"name": "p", "labels": {c.LABEL_SET_NAME: 7}}}
ABUSES = [
    pytest.param(post(LWS_PATH, b'{"request": {"uid":'), id="truncated json"),
    pytest.param(post(LWS_PATH, b"\xff\xfe not utf-8"), id="not utf-8"),
    pytest.param(post(LWS_PATH, b""), id="empty body"),
    pytest.param(post(LWS_PATH, b"null"), id="json null"),
    pytest.param(post(LWS_PATH, b"[1, 2]"), id="json array"),
    pytest.param(post(LWS_PATH, b'"AdmissionReview"'), id="json string"),
    pytest.param(post(LWS_PATH, b'{"request": null}'), id="request null"),
    pytest.param(post(LWS_PATH, review(None)), id="no object"),
    pytest.param(post(LWS_PATH, b'{"request": {"object": "lws"}}'), id="object a string"),
    pytest.param(
        post(LWS_PATH, review(lws().obj(), apiVersion="admission.k8s.io/v9")), id="wrong apiVersion"
    ),
    pytest.param(post(LWS_PATH, review(lws().obj(), kind="TokenReview")), id="wrong kind"),
    pytest.param(post(LWS_PATH, review(lws().obj(), apiVersion=["x"])), id="apiVersion a list"),
    pytest.param(post(LWS_PATH, review(lws().obj()), content_type="text/plain"), id="text/plain"),
    pytest.param(post(LWS_PATH, review(lws().obj()), content_type=None), id="no content type"),
    pytest.param(
        post(LWS_PATH, review(lws().obj()), content_type="application/x-www-form-urlencoded"), id="form"
    ),
    pytest.param(post(LWS_PATH, review(lws().obj()), content_type="application/yaml"), id="yaml"),
    pytest.param(post(LWS_PATH, b"", method="GET"), id="GET"),
    pytest.param(post("/no-such-webhook", review(lws().obj())), id="unknown path"),
    pytest.param(post(POD_PATH, review(BAD_POD)), id="pod label a number"),
    pytest.param(
        post(POD_PATH, review({**leader().obj(), "spec": {"containers": {"a": 1}}})), id="containers map"
    ),
    pytest.param(post(LWS_PATH, nested(200_000)), id="nested 200k deep"),
    pytest.param(post(c.WEBHOOK_PATH_MUTATE_LWS, review(lws().obj(), request=[])), id="request a list"),
    pytest.param(Abuse(b"POST " + LWS_PATH.encode() + b" HTTP/9.9\r\n\r\n"), id="bad http version"),
    pytest.param(Abuse(b"\x00\x01\x02 garbage\r\n\r\n"), id="garbage request line"),
    pytest.param(
        Abuse(
            f"POST {LWS_PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            "zz\r\n".encode()
        ),
        id="bad chunk",
    ),
    pytest.param(
        Abuse(
            f"POST {LWS_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nConnection: close\r\n\r\n".encode()
        ),
        id="negative content length",
    ),
    pytest.param(
        Abuse(f"POST {LWS_PATH} HTTP/1.1\r\nHost: x\r\nX: {'a' * 100_000}\r\n\r\n".encode()), id="huge header"
    ),
    pytest.param(post(LWS_PATH, b" " * (17 * 1024 * 1024)), id="17 MiB body"),
]


@pytest.mark.parametrize("abuse", ABUSES)
async def test_a_malformed_request_gets_a_4xx(
    webhook_server: tuple[WebhookServer, bytes], abuse: Abuse
) -> None:
    server, ca = webhook_server
    answer = await rawhttp.send(server.port, ca, abuse.raw, timeout=WEBHOOK_TIMEOUT)
    assert answer.client_error(), (answer.status, answer.body[:300])


def test_the_abuse_table_is_whole() -> None:
    assert len(ABUSES) == 28


async def test_slow_clients_do_not_stall_admissions(
    webhook_server: tuple[WebhookServer, bytes], webhook_client: KubeClient, webhook_namespace: str
) -> None:
    """Hold many connections with partial headers and bodies open while the API server admits
    objects through the same server: each admission must be answered within the API server's
    webhook timeout (otherwise the create fails), and direct reviews too."""
    server, ca = webhook_server
    head = f"POST {LWS_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
    body = review(lws().obj())
    partial_body = head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10]
    held = [await rawhttp.hold(server.port, ca, head if i % 2 else partial_body) for i in range(SLOW_CLIENTS)]
    try:
        path = LEADERWORKERSETS.collection_path(webhook_namespace)
        for index in range(ADMISSIONS_WHILE_HELD):
            subject = LeaderWorkerSetBuilder(webhook_namespace, f"held-{index}").obj()
            # A refusal by failurePolicy Fail (webhook not answered in time) raises here.
            await webhook_client.request("POST", path, body=subject, params={"dryRun": "All"})
            direct = await rawhttp.send(
                server.port, ca, rawhttp.request_bytes(LWS_PATH, body), timeout=WEBHOOK_TIMEOUT
            )
            assert direct.status == 200, direct
            assert direct.review_code() is None, direct
        # The held clients are still connected: the admissions above ran beside them.
        assert all(not reader.at_eof() for reader, _ in held)
    finally:
        for _, writer in held:
            writer.close()


@pytest.fixture
async def strict_server(tmp_path: Path) -> tuple[WebhookServer, bytes]:
    config = certs.CertConfig(namespace="lws-system", ip_addresses=("127.0.0.1",))
    artifacts = certissue.generate(config, certs.utc_now())
    certs.write_cert_dir(tmp_path, artifacts)
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0, body_timeout=1.0, idle_timeout=2.0)
    await server.start()
    yield server, artifacts.ca_cert  # type: ignore[misc]
    await server.stop()


async def test_a_slow_body_is_answered_408_and_slow_headers_are_dropped(
    strict_server: tuple[WebhookServer, bytes],
) -> None:
    """The server's limits (here shortened) end what the slow clients started: a body that stops
    coming gets 408, a connection whose headers never end is closed."""
    server, ca = strict_server
    head = f"POST {LWS_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
    slow_body_reader, slow_body = await rawhttp.hold(server.port, ca, head + b"Content-Length: 1000\r\n\r\n{")
    slow_head_reader, slow_head = await rawhttp.hold(server.port, ca, head)
    try:
        answer = await asyncio.wait_for(slow_body_reader.read(), 30)
        assert answer.split(b"\r\n", 1)[0].split()[1] == b"408", answer[:200]

        async def dropped() -> bool:
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await asyncio.wait_for(slow_head_reader.read(), 1)
            return slow_head_reader.at_eof()

        await eventually(dropped, timeout=30, message="a connection with unfinished headers stayed open")
    finally:
        slow_body.close()
        slow_head.close()
