"""Certificates (generation, renewal decisions, cert dir) and the HTTPS server with hot reload."""

import asyncio
import base64
import datetime as dt
import json
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from leaderworkerset.api import constants as c
from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.metrics import new_webhook_metrics
from leaderworkerset.webhooks.server import WebhookServer
from tests.support.builders import lws
from tests.support.wait import TIMEOUT

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
LOCAL = certs.CertConfig(namespace="lws-system", ip_addresses=("127.0.0.1",), extra_dns_names=("localhost",))


@pytest.fixture(scope="module")
def artifacts() -> certs.CertArtifacts:
    return certissue.generate(LOCAL, NOW)


def test_serving_certificate_names_the_service_and_is_signed_by_the_ca(
    artifacts: certs.CertArtifacts,
) -> None:
    ca = x509.load_pem_x509_certificate(artifacts.ca_cert)
    cert = x509.load_pem_x509_certificate(artifacts.cert)
    cert.verify_directly_issued_by(ca)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["lws-webhook-service.lws-system.svc", "localhost"]
    assert ca.subject.rfc4514_string() == "O=lws,CN=lws-ca"


@pytest.mark.parametrize(
    ("config", "at", "want"),
    [
        pytest.param(LOCAL, NOW, False, id="fresh certificates are kept"),
        pytest.param(LOCAL, NOW + dt.timedelta(days=270), False, id="95 days left is fine"),
        pytest.param(LOCAL, NOW + dt.timedelta(days=280), True, id="85 days left renews"),
        pytest.param(certs.CertConfig(namespace="other"), NOW, True, id="another service name renews"),
        pytest.param(
            certs.CertConfig(namespace="lws-system", ip_addresses=("10.0.0.1",)),
            NOW,
            True,
            id="missing IP renews",
        ),
    ],
)
def test_needs_renewal(
    artifacts: certs.CertArtifacts, config: certs.CertConfig, at: dt.datetime, want: bool
) -> None:
    assert certissue.needs_renewal(artifacts, config, at) is want


def test_missing_or_garbled_artifacts_need_renewal(artifacts: certs.CertArtifacts) -> None:
    assert certissue.needs_renewal(None, LOCAL, NOW)
    garbled = certs.CertArtifacts(artifacts.ca_cert, artifacts.ca_key, b"junk", artifacts.key)
    assert certissue.needs_renewal(garbled, LOCAL, NOW)


def test_renewing_the_serving_certificate_keeps_the_ca(artifacts: certs.CertArtifacts) -> None:
    later = NOW + dt.timedelta(days=300)
    renewed, changed = certissue.ensure(artifacts, LOCAL, later)
    assert changed
    assert renewed.ca_cert == artifacts.ca_cert
    assert renewed.cert != artifacts.cert
    assert not certissue.needs_renewal(renewed, LOCAL, later)


def test_renew_at_is_the_first_moment_a_pair_needs_renewal(artifacts: certs.CertArtifacts) -> None:
    """The manager trusts the issuer's verdict on an unchanged pair until `renew_at` (certs.CertManager)."""
    due = certissue.renew_at(artifacts, LOCAL)
    assert due > NOW
    assert not certissue.needs_renewal(artifacts, LOCAL, due - dt.timedelta(seconds=1))
    assert certissue.needs_renewal(artifacts, LOCAL, due)


def test_the_issuer_job_answers_what_ensure_decides(artifacts: certs.CertArtifacts) -> None:
    """The child's side of the exchange, without the child: request and answer survive JSON."""
    request = json.loads(json.dumps(certs.ensure_request(artifacts, LOCAL, NOW)))
    kept = certs.Ensured.from_answer(json.loads(json.dumps(certissue.job(request))))
    assert kept == certs.Ensured(artifacts, False, certissue.renew_at(artifacts, LOCAL))

    renewed = certs.Ensured.from_answer(certissue.job(certs.ensure_request(None, LOCAL, NOW)))
    assert renewed.changed
    assert not certissue.needs_renewal(renewed.artifacts, LOCAL, NOW)


def test_secret_data_round_trips(artifacts: certs.CertArtifacts) -> None:
    data = artifacts.to_secret_data()
    assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert certs.CertArtifacts.from_secret_data(data) == artifacts
    assert certs.CertArtifacts.from_secret_data({"tls.crt": "x"}) is None


def test_trust_is_added_certificate_by_certificate_and_never_twice(artifacts: certs.CertArtifacts) -> None:
    """Passes that only add trust run again and again during a rotation: the bundle they write
    holds each CA once, the new one first, however often they run."""
    new_ca = certissue.generate(LOCAL, NOW).ca_cert

    def configuration(bundle: bytes) -> dict[str, Any]:
        return {"webhooks": [{"clientConfig": {"caBundle": base64.b64encode(bundle).decode()}}] * 2}

    first = certs.with_trusted(new_ca, configuration(artifacts.ca_cert))
    again = certs.with_trusted(new_ca, configuration(first))
    assert first == again == new_ca + artifacts.ca_cert
    assert certs.with_trusted(new_ca, {"webhooks": [{"clientConfig": {}}]}) == new_ca


def test_cert_dir_writes_only_changes(tmp_path: Path, artifacts: certs.CertArtifacts) -> None:
    assert certs.write_cert_dir(tmp_path, artifacts)
    assert (tmp_path / c.TLS_CERT_FILE).read_bytes() == artifacts.cert
    assert not certs.write_cert_dir(tmp_path, artifacts)


def _client_context(ca_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.check_hostname = True
    return context


async def _peer_serial(port: int, ca_pem: bytes) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=_client_context(ca_pem))
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return int(x509.load_der_x509_certificate(der).serial_number)


async def test_server_answers_reviews_over_https_and_reloads_rotated_certs(tmp_path: Path) -> None:
    # Real time here: the TLS client checks validity against the wall clock.
    first = certissue.generate(LOCAL, certs.utc_now())
    certs.write_cert_dir(tmp_path, first)
    registry = CollectorRegistry()
    metrics = new_webhook_metrics(registry)
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0, reload_interval=0.05, metrics=metrics)
    await server.start()
    try:
        body: dict[str, Any] = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u1", "operation": "CREATE", "object": lws().replicas(-1).obj()},
        }
        url = f"https://127.0.0.1:{server.port}{c.WEBHOOK_PATH_VALIDATE_LWS}"
        connector = aiohttp.TCPConnector(ssl=_client_context(first.ca_cert))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.post(url, json=body) as resp,
        ):
            answer = json.loads(await resp.read())
        assert resp.version == aiohttp.HttpVersion11
        assert answer["response"]["uid"] == "u1"
        assert answer["response"]["status"]["code"] == 403
        labels = {"webhook": c.WEBHOOK_PATH_VALIDATE_LWS, "code": "403"}
        assert registry.get_sample_value("controller_runtime_webhook_requests_total", labels) == 1.0

        # Same CA, new serving pair: the next handshake must present it without a restart.
        cert, key = certissue.generate_serving(first.ca_cert, first.ca_key, LOCAL, certs.utc_now())
        second = certs.CertArtifacts(first.ca_cert, first.ca_key, cert, key)
        certs.write_cert_dir(tmp_path, second)
        assert server.reloader is not None
        server.reloader.reload_if_changed()
        want = x509.load_pem_x509_certificate(second.cert).serial_number
        assert await _peer_serial(server.port, first.ca_cert) == want
    finally:
        await server.stop()


def test_long_service_dns_name_still_gets_a_certificate() -> None:
    config = certs.CertConfig(namespace="n" * 60)
    artifacts = certissue.generate(config, NOW)
    assert not certissue.needs_renewal(artifacts, config, NOW)


async def test_server_refuses_tls_below_the_configured_minimum(tmp_path: Path) -> None:
    artifacts = certissue.generate(LOCAL, certs.utc_now())
    certs.write_cert_dir(tmp_path, artifacts)
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0, tls=TLSSettings(min_version="TLSv1_3"))
    await server.start()
    try:
        legacy_client = _client_context(artifacts.ca_cert)
        legacy_client.maximum_version = ssl.TLSVersion.TLSv1_2
        # The server aborts the handshake: an SSL alert or a reset, depending on timing.
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await asyncio.open_connection("127.0.0.1", server.port, ssl=legacy_client)
        modern_client = _client_context(artifacts.ca_cert)
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=modern_client)
        assert writer.get_extra_info("ssl_object").version() == "TLSv1.3"
        writer.close()
        await writer.wait_closed()
    finally:
        await server.stop()


async def _answer(reader: asyncio.StreamReader) -> tuple[int, str | None]:
    """Read one HTTP/1.1 answer: its status and its Connection header."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    status, *fields = head.strip().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)}
    await reader.readexactly(int(headers["content-length"]))
    return int(status.split()[1]), headers.get("connection")


async def test_a_draining_server_answers_with_connection_close_and_a_stop_closes_idle_connections(
    tmp_path: Path,
) -> None:
    """The API server keeps webhook connections alive and does not retry a POST it wrote on one that
    closed: once the server drains (and so while it stops) its answers tell it not to pool them."""
    artifacts = certissue.generate(LOCAL, certs.utc_now())
    certs.write_cert_dir(tmp_path, artifacts)
    server = WebhookServer(tmp_path, host="127.0.0.1", port=0)
    await server.start()
    try:
        review = {"uid": "u1", "operation": "CREATE", "object": lws().obj()}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": review})
        call = (
            f"POST {c.WEBHOOK_PATH_VALIDATE_LWS} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
        context = _client_context(artifacts.ca_cert)
        used, idle = [await asyncio.open_connection("127.0.0.1", server.port, ssl=context) for _ in range(2)]
        for reader, writer in (used, idle):
            writer.write(call)
            assert await _answer(reader) == (200, None), "kept alive while serving"

        server.drain()
        used[1].write(call)
        assert await _answer(used[0]) == (200, "close")
        assert await asyncio.wait_for(used[0].read(), TIMEOUT) == b"", "closed after the answer"
        # Still serving new connections (a Service may route one here until the endpoint goes).
        late = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        late[1].write(call)
        assert await _answer(late[0]) == (200, "close")

        await server.stop()
        assert await asyncio.wait_for(idle[0].read(), TIMEOUT) == b"", "the stop closed the idle one"
        for _, writer in (used, idle, late):
            writer.close()
    finally:
        await server.stop()
