"""Serving certificates for the webhook server, the internal cert management.

Like upstream's cert-controller rotator: a self-signed CA (`lws-ca`, organisation `lws`) signs a
serving certificate for `<service>.<namespace>.svc`; both live in one Secret (`ca.crt`, `ca.key`,
`tls.crt`, `tls.key`), the serving pair is written to the cert dir, and the CA is injected as
`caBundle` into our two webhook configurations. Certificates are renewed well before they expire.

Generation and the renew decision are pure (the clock is a parameter) and live in
`webhooks/certissue.py`, which a child process runs (they need `cryptography`, which the manager
never loads: runtime/childjob.py); `CertManager` does the I/O.
"""

import asyncio
import base64
import contextlib
import datetime as dt
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime import childjob
from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError, is_already_exists, is_conflict, is_not_found
from leaderworkerset.runtime.projections import METADATA_CODEC, MetadataOnly
from leaderworkerset.runtime.reflector import FuncHandler
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.webhooks.configurations import inject_ca_bundle

_log = structlog.get_logger(__name__)

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
# Renew when less than this is left, so a restart or a slow rollout never serves an expired cert.
RENEW_BEFORE = dt.timedelta(days=90)


@dataclass(frozen=True)
class CertArtifacts:
    """PEM bytes of the CA and the serving pair."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def to_secret_data(self) -> dict[str, str]:
        pairs = {
            CA_CERT_KEY: self.ca_cert,
            CA_KEY_KEY: self.ca_key,
            c.TLS_CERT_FILE: self.cert,
            c.TLS_KEY_FILE: self.key,
        }
        return {k: base64.b64encode(v).decode() for k, v in pairs.items()}

    @classmethod
    def from_secret_data(cls, data: dict[str, str] | None) -> "CertArtifacts | None":
        data = data or {}
        try:
            values = [
                base64.b64decode(data[k]) for k in (CA_CERT_KEY, CA_KEY_KEY, c.TLS_CERT_FILE, c.TLS_KEY_FILE)
            ]
        except (KeyError, ValueError):
            return None
        return cls(*values)


@dataclass(frozen=True)
class CertConfig:
    """Where the certificates live and which names they must cover."""

    namespace: str = c.DEFAULT_NAMESPACE
    service_name: str = c.DEFAULT_WEBHOOK_SERVICE_NAME
    secret_name: str = c.DEFAULT_WEBHOOK_SECRET_NAME
    cert_dir: Path = Path(c.DEFAULT_WEBHOOK_CERT_DIR)
    extra_dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    renew_before: dt.timedelta = RENEW_BEFORE
    configuration_names: tuple[str, ...] = field(
        default=(c.MUTATING_WEBHOOK_CONFIGURATION_NAME, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME)
    )

    @property
    def dns_name(self) -> str:
        return f"{self.service_name}.{self.namespace}.svc"

    @property
    def dns_names(self) -> tuple[str, ...]:
        return (self.dns_name, *self.extra_dns_names)


# ---- the child that generates and checks certificates (webhooks/certissue.py) -------------------

ISSUER = "leaderworkerset.webhooks.certissue"


def ensure_request(artifacts: CertArtifacts | None, config: CertConfig, now: dt.datetime) -> dict[str, Any]:
    """What the issuer needs to decide: the stored pair, the names it must cover, and the time."""
    return {
        "artifacts": artifacts.to_secret_data() if artifacts is not None else None,
        "namespace": config.namespace,
        "service_name": config.service_name,
        "extra_dns_names": list(config.extra_dns_names),
        "ip_addresses": list(config.ip_addresses),
        "renew_before_seconds": config.renew_before.total_seconds(),
        "now": now.isoformat(),
    }


def parse_ensure_request(request: dict[str, Any]) -> tuple[CertArtifacts | None, CertConfig, dt.datetime]:
    config = CertConfig(
        namespace=request["namespace"],
        service_name=request["service_name"],
        extra_dns_names=tuple(request["extra_dns_names"]),
        ip_addresses=tuple(request["ip_addresses"]),
        renew_before=dt.timedelta(seconds=request["renew_before_seconds"]),
    )
    return (
        CertArtifacts.from_secret_data(request["artifacts"]),
        config,
        dt.datetime.fromisoformat(request["now"]),
    )


@dataclass(frozen=True)
class Ensured:
    """The issuer's answer: the pair to use, whether it is new, and until when it stays good (the
    first moment a renewal falls due, the CA's or the serving certificate's)."""

    artifacts: CertArtifacts
    changed: bool
    renew_at: dt.datetime

    def to_answer(self) -> dict[str, Any]:
        return {
            "artifacts": self.artifacts.to_secret_data(),
            "changed": self.changed,
            "renew_at": self.renew_at.isoformat(),
        }

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> "Ensured":
        artifacts = CertArtifacts.from_secret_data(answer["artifacts"])
        if artifacts is None:
            raise ValueError("the certificate issuer answered without a complete pair")
        return cls(artifacts, bool(answer["changed"]), dt.datetime.fromisoformat(answer["renew_at"]))


def write_cert_dir(cert_dir: Path, artifacts: CertArtifacts) -> bool:
    """Write tls.crt/tls.key atomically (each via rename); returns whether anything changed."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, content in ((c.TLS_KEY_FILE, artifacts.key), (c.TLS_CERT_FILE, artifacts.cert)):
        target = cert_dir / name
        if target.exists() and target.read_bytes() == content:
            continue
        fd, tmp = tempfile.mkstemp(dir=cert_dir, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
        changed = True
    return changed


_PEM_END = b"-----END CERTIFICATE-----\n"


def _pem_blocks(bundle: bytes) -> list[bytes]:
    """The certificates of a PEM bundle, each ending in its END line and a newline."""
    return [block.strip() + b"\n" + _PEM_END for block in bundle.split(_PEM_END.strip()) if block.strip()]


def with_trusted(ca_bundle: bytes, configuration: MutableObj) -> bytes:
    """`ca_bundle` followed by the CAs the configuration's webhooks trust now, each certificate
    once: passes that only add trust may run many times while a rotation is under way."""
    blocks = _pem_blocks(ca_bundle)
    for webhook in configuration.get("webhooks") or []:
        encoded = (webhook.get("clientConfig") or {}).get("caBundle")
        previous = base64.b64decode(encoded) if isinstance(encoded, str) else b""
        blocks += [block for block in _pem_blocks(previous) if block not in blocks]
    return b"".join(blocks)


# ---- I/O: the Secret, the cert dir and the caBundle of our webhook configurations ---------------

SECRETS = ResourceRef("", "v1", "Secret", "secrets")
MUTATING_CONFIGURATIONS = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    False,
)
VALIDATING_CONFIGURATIONS = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
_WRITE_ATTEMPTS = 5
Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CertManager:
    """Keeps the Secret, the cert dir and the caBundles in step; safe to run in several replicas
    (a lost write race re-reads the Secret and adopts the winner's certificates)."""

    def __init__(self, client: KubeClient, config: CertConfig, clock: Clock = utc_now) -> None:
        self._client = client
        self._config = config
        self._clock = clock
        self.artifacts: CertArtifacts | None = None
        # The pair the issuer last found good, and until when: a pass that reads it again from
        # the Secret before then needs no child.
        self._checked: tuple[CertArtifacts, dt.datetime] | None = None

    async def reconcile(self, *, trim: bool = True) -> CertArtifacts:
        """Secret, caBundles, then the cert dir. A new CA is trusted before a certificate it signed
        is served, and the old CA stays trusted while the old certificate may still be served: the
        pass that writes a new pair adds its CA to the bundles, a later pass with `trim` (the pair
        already in place) leaves only the current CA. Without `trim` a pass only adds trust."""
        artifacts = await self._ensure_secret()
        served = self._config.cert_dir / c.TLS_CERT_FILE
        rotating = served.exists() and served.read_bytes() != artifacts.cert
        await self._inject(artifacts.ca_cert, keep_trusted=rotating or not trim)
        write_cert_dir(self._config.cert_dir, artifacts)
        self.artifacts = artifacts
        return artifacts

    async def run(
        self, stop: asyncio.Event, ready: asyncio.Event | None = None, interval: float = 600.0
    ) -> None:
        """Reconcile now, then whenever the Secret or one of our webhook configurations changes, and
        every `interval` seconds, until `stop`; `ready` is set after the first success (upstream
        starts webhooks and controllers only once certs are ready).

        Watching makes two things immediate, as upstream's cert-controller does: deleting the Secret
        forces a new CA and serving pair (the documented way to rotate by hand), and a caBundle that
        an apply or `helm upgrade` reset is put back. Only the periodic pass trims the bundles: a
        pass woken by a change only adds trust, so while the other replica has not yet written the
        new pair to its cert dir, the CA of the pair it still serves stays trusted."""
        wake = asyncio.Event()
        watching = asyncio.create_task(self._watch(wake), name="webhook-certs:watch")
        try:
            periodic = True
            while not stop.is_set():
                try:
                    await self.reconcile(trim=periodic)
                    if ready is not None:
                        ready.set()
                except ApiStatusError as err:
                    _log.warning("webhook certificate reconcile failed", error=str(err))
                periodic = await _next_pass(stop, wake, interval)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching

    async def _watch(self, wake: asyncio.Event) -> None:
        """Set `wake` on every change of the Secret or of a webhook configuration we inject into.
        Each watch names its one object (a field selector on the name), which is what the Role's
        and ClusterRole's resourceNames allow."""
        cache = Cache(self._client)
        watched: list[tuple[ResourceRef, str | None, str]] = [
            (SECRETS, self._config.namespace, self._config.secret_name)
        ]
        for ref in (MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS):
            watched += [(ref, None, name) for name in self._config.configuration_names]
        handler: FuncHandler[MetadataOnly] = FuncHandler(
            add=lambda _: wake.set(), update=lambda _old, _new: wake.set(), delete=lambda _: wake.set()
        )
        for watched_ref, namespace, name in watched:
            informer = cache.informer(
                watched_ref,
                METADATA_CODEC,
                namespace=namespace,
                field_selector=f"metadata.name={name}",
                name=f"webhook-certs:{watched_ref.plural}/{name}",
            )
            informer.add_handler(handler)
        await cache.run()

    async def _read_secret(self) -> MutableObj | None:
        try:
            return await self._client.get(SECRETS, self._config.namespace, self._config.secret_name)
        except ApiStatusError as err:
            if is_not_found(err):
                return None
            raise

    async def _ensure_secret(self) -> CertArtifacts:
        for _ in range(_WRITE_ATTEMPTS):
            secret = await self._read_secret()
            current = CertArtifacts.from_secret_data(secret.get("data") if secret else None)
            artifacts, changed = await self._ensure(current, self._clock())
            if not changed:
                return artifacts
            try:
                await self._write_secret(secret, artifacts)
                return artifacts
            except ApiStatusError as err:
                if not (is_conflict(err) or is_already_exists(err)):
                    raise
        raise RuntimeError(f"could not store certificates in secret {self._config.secret_name}")

    async def _ensure(self, current: CertArtifacts | None, now: dt.datetime) -> tuple[CertArtifacts, bool]:
        """`certissue.ensure`, asked of a child process (runtime/childjob.py): the manager never
        loads `cryptography`. Between renewals a pass finds the same pair in the Secret, and the
        issuer's verdict on it holds until its `renew_at`."""
        checked = self._checked
        if current is not None and checked is not None and checked[0] == current and now < checked[1]:
            return current, False
        ensured = Ensured.from_answer(
            await childjob.call_async(ISSUER, ensure_request(current, self._config, now))
        )
        self._checked = (ensured.artifacts, ensured.renew_at)
        return ensured.artifacts, ensured.changed

    async def _write_secret(self, secret: MutableObj | None, artifacts: CertArtifacts) -> None:
        if secret is None:
            body: MutableObj = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": self._config.secret_name, "namespace": self._config.namespace},
                "data": artifacts.to_secret_data(),
            }
            await self._client.create(SECRETS, body, self._config.namespace)
            return
        await self._client.update(SECRETS, {**secret, "data": artifacts.to_secret_data()})

    async def _inject(self, ca_bundle: bytes, keep_trusted: bool = False) -> None:
        for ref in (MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS):
            for name in self._config.configuration_names:
                try:
                    current = await self._client.get(ref, None, name)
                except ApiStatusError as err:
                    if is_not_found(err):
                        continue
                    raise
                bundle = with_trusted(ca_bundle, current) if keep_trusted else ca_bundle
                wanted = inject_ca_bundle(current, bundle)
                if wanted != current:
                    await self._client.update(ref, wanted)


async def _next_pass(stop: asyncio.Event, wake: asyncio.Event, interval: float) -> bool:
    """Wait for a change, `stop` or `interval` seconds; True when the interval elapsed (a
    periodic pass), False when woken (or stopping)."""
    waiters = {asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())}
    try:
        done, _ = await asyncio.wait(waiters, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    wake.clear()
    return not done
