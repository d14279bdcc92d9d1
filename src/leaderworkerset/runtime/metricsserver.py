"""The /metrics endpoint: HTTPS with Kubernetes authentication and authorization, as upstream serves it.

Secure mode (the default, like controller-runtime's `FilterProvider: WithAuthenticationAndAuthorization`):
the bearer token is checked with a TokenReview, then a SubjectAccessReview asks whether that user may
`get` the non-resource URL `/metrics`. Decisions are cached briefly so a scraper does not cost two API
calls per scrape. Without a certificate directory a self-signed certificate is generated, as
controller-runtime does. `secure=False` serves plain HTTP with no authentication (local runs only).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from leaderworkerset.api.tls import TLSSettings
from leaderworkerset.runtime import childjob
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.tlsconfig import server_context

TOKEN_REVIEWS = ResourceRef("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False)
SUBJECT_ACCESS_REVIEWS = ResourceRef(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)
ALLOWED_TTL = 60.0
DENIED_TTL = 10.0

Create = Callable[[ResourceRef, Any], Awaitable[dict[str, Any]]]


class KubeAuthorizer:
    """Bearer token → TokenReview → SubjectAccessReview(get <path>), with a small decision cache."""

    def __init__(self, create: Create, clock: Clock | None = None) -> None:
        self._create = create
        self._clock: Clock = clock or RealClock()
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}

    async def status_for(self, authorization: str | None, path: str) -> int:
        """200 allowed, 401 unauthenticated, 403 forbidden."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return 401
        token = authorization[7:].strip()
        cached = self._cache.get((token, path))
        if cached is not None and cached[0] > self._clock.now():
            return cached[1]
        status = await self._decide(token, path)
        ttl = ALLOWED_TTL if status == 200 else DENIED_TTL
        if len(self._cache) > 1024:
            self._cache.clear()
        self._cache[(token, path)] = (self._clock.now() + ttl, status)
        return status

    async def _decide(self, token: str, path: str) -> int:
        review = await self._create(
            TOKEN_REVIEWS,
            {"apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind, "spec": {"token": token}},
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return 401
        user = status.get("user") or {}
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "uid": user.get("uid", ""),
            "groups": user.get("groups") or [],
            "nonResourceAttributes": {"path": path, "verb": "get"},
        }
        if user.get("extra"):
            spec["extra"] = user["extra"]
        sar = await self._create(
            SUBJECT_ACCESS_REVIEWS,
            {
                "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
                "kind": SUBJECT_ACCESS_REVIEWS.kind,
                "spec": spec,
            },
        )
        return 200 if (sar.get("status") or {}).get("allowed") else 403


def metrics_app(registry: CollectorRegistry, authorizer: KubeAuthorizer | None) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        if authorizer is not None:
            try:
                status = await authorizer.status_for(request.headers.get("Authorization"), request.path)
            except Exception as exc:  # the API server could not be asked: fail closed
                return web.Response(status=500, text=f"authorization check failed: {exc}\n")
            if status == 401:
                return web.Response(status=401, text="Unauthorized\n")
            if status == 403:
                return web.Response(status=403, text="Forbidden\n")
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", handle)
    return app


def self_signed_pair(host: str = "localhost") -> tuple[bytes, bytes]:
    """A fresh self-signed serving certificate and key (PEM), valid for one year, made by a child
    process so that this one never loads `cryptography` (runtime/childjob.py)."""
    answer = childjob.call("leaderworkerset.runtime.certificates", {"host": host})
    return answer["cert"].encode(), answer["key"].encode()


def server_ssl_context(
    cert_dir: str | None = None, *, min_version: ssl.TLSVersion | None = None, tls: TLSSettings | None = None
) -> ssl.SSLContext:
    """TLS for the metrics server: tls.crt/tls.key from cert_dir, else a generated self-signed pair."""
    context = server_context(tls)
    if min_version is not None:
        context.minimum_version = min_version
    if cert_dir and (Path(cert_dir) / "tls.crt").exists():
        context.load_cert_chain(str(Path(cert_dir) / "tls.crt"), str(Path(cert_dir) / "tls.key"))
        return context
    cert, key = self_signed_pair()
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        Path(cert_path).write_bytes(cert)
        Path(key_path).write_bytes(key)
        context.load_cert_chain(cert_path, key_path)
    return context
