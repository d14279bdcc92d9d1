"""Probe endpoints and the authenticated metrics endpoint, served by aiohttp's in-process test server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.metrics import new_runtime_metrics
from leaderworkerset.runtime.metricsserver import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    KubeAuthorizer,
    metrics_app,
    server_ssl_context,
)
from leaderworkerset.runtime.probes import CheckSet, ping, probe_app
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.tlsconfig import server_context


def failing() -> bool:
    raise RuntimeError("certs not ready")


async def async_false() -> bool:
    return False


@pytest.mark.parametrize(
    ("checks", "query", "want_status", "want_body"),
    [
        pytest.param({"ping": ping}, "", 200, "ok", id="healthy"),
        pytest.param(
            {"ping": ping, "certs": failing},
            "",
            500,
            "[+]ping ok\n[-]certs failed: certs not ready\nhealthz check failed\n",
            id="failing check lists the reason",
        ),
        pytest.param(
            {"gate": async_false}, "", 500, "[-]gate failed: check returned false", id="async false"
        ),
        pytest.param({"ping": ping}, "?verbose", 200, "[+]ping ok\nhealthz check passed\n", id="verbose"),
    ],
)
async def test_readiness(checks: dict[str, Any], query: str, want_status: int, want_body: str) -> None:
    app = probe_app(CheckSet({"ping": ping}), CheckSet(dict(checks)), "/healthz", "/readyz")
    async with TestClient(TestServer(app)) as client:
        response = await client.get(f"/readyz{query}")
        assert response.status == want_status
        assert want_body in await response.text()
        assert (await client.get("/healthz")).status == 200


def test_duplicate_check_rejected() -> None:
    checks = CheckSet({"ping": ping})
    with pytest.raises(ValueError, match="already registered"):
        checks.add("ping", ping)


class FakeReviews:
    """TokenReview / SubjectAccessReview answers keyed by token and user."""

    def __init__(self, users: dict[str, str], allowed: set[str]) -> None:
        self.users = users
        self.allowed = allowed
        self.calls: list[str] = []

    async def create(self, ref: ResourceRef, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(ref.kind)
        if ref == TOKEN_REVIEWS:
            user = self.users.get(body["spec"]["token"])
            if user is None:
                return {"status": {"authenticated": False}}
            return {"status": {"authenticated": True, "user": {"username": user, "groups": ["g"]}}}
        assert ref == SUBJECT_ACCESS_REVIEWS
        assert body["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
        return {"status": {"allowed": body["spec"]["user"] in self.allowed}}


@pytest.fixture
async def metrics_client() -> AsyncIterator[tuple[TestClient[Any, Any], FakeReviews]]:
    metrics = new_runtime_metrics(CollectorRegistry())
    metrics.reconcile.total.labels("leaderworkerset", "success").inc()
    reviews = FakeReviews({"good": "prometheus", "nobody": "stranger"}, allowed={"prometheus"})
    app = metrics_app(metrics.registry, KubeAuthorizer(reviews.create, FakeClock()))
    async with TestClient(TestServer(app)) as client:
        yield client, reviews


@pytest.mark.parametrize(
    ("headers", "want_status"),
    [
        pytest.param({}, 401, id="no token"),
        pytest.param({"Authorization": "Basic abc"}, 401, id="not a bearer token"),
        pytest.param({"Authorization": "Bearer unknown"}, 401, id="token not authenticated"),
        pytest.param({"Authorization": "Bearer nobody"}, 403, id="authenticated but not authorized"),
        pytest.param({"Authorization": "Bearer good"}, 200, id="authorized"),
    ],
)
async def test_metrics_authn_authz(
    metrics_client: tuple[TestClient[Any, Any], FakeReviews], headers: dict[str, str], want_status: int
) -> None:
    client, _ = metrics_client
    response = await client.get("/metrics", headers=headers)
    assert response.status == want_status
    if want_status == 200:
        body = await response.text()
        assert 'controller_runtime_reconcile_total{controller="leaderworkerset",result="success"} 1.0' in body


async def test_metrics_decisions_are_cached(metrics_client: tuple[TestClient[Any, Any], FakeReviews]) -> None:
    client, reviews = metrics_client
    for _ in range(3):
        assert (await client.get("/metrics", headers={"Authorization": "Bearer good"})).status == 200
    assert reviews.calls == ["TokenReview", "SubjectAccessReview"]


async def test_metrics_without_authorizer_is_open() -> None:
    app = metrics_app(new_runtime_metrics(CollectorRegistry()).registry, None)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/metrics")).status == 200


def test_self_signed_context_serves_http11_only() -> None:
    context = server_ssl_context(None)
    assert context.minimum_version.name == "TLSv1_2"


@pytest.mark.parametrize(
    ("settings", "want_min", "want_in", "want_out"),
    [
        pytest.param(None, "TLSv1_2", "ECDHE-RSA-AES128-GCM-SHA256", None, id="defaults: TLS 1.2+"),
        pytest.param(
            TLSSettings(min_version="TLSv1_2", cipher_suite_ids=(0xC02F,)),
            "TLSv1_2",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "ECDHE-RSA-AES256-GCM-SHA384",
            id="cipher list restricts TLS 1.2 suites",
        ),
        pytest.param(TLSSettings(min_version="TLSv1_3"), "TLSv1_3", None, None, id="TLS 1.3 only"),
    ],
)
def test_tls_settings(
    settings: TLSSettings | None, want_min: str, want_in: str | None, want_out: str | None
) -> None:
    context = server_context(settings)
    assert context.minimum_version.name == want_min
    names = {cipher["name"] for cipher in context.get_ciphers()}
    if want_in is not None:
        assert want_in in names
    if want_out is not None:
        assert want_out not in names


def test_unknown_cipher_id_is_an_error() -> None:
    with pytest.raises(ValueError, match="not available"):
        server_context(TLSSettings(cipher_suite_ids=(0xFFFF,)))
