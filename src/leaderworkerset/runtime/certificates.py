"""X.509 keys and certificates, built one way for every TLS party we create: the metrics server's
self-signed pair (runtime/metricsserver.py), the webhook CA and serving certificate
(webhooks/certs.py) and the local control plane's CA, serving and client certificates
(devcluster/pki.py). Generated with ``cryptography``, so no openssl binary is needed.

Each caller keeps its own key type, validity, subject and extensions (in its own order): they
are parameters here, with helpers for the extensions the callers share.

The manager process never imports this module (its native library costs about 11 MiB of RSS for
good): it asks a child for the metrics server's pair (`job`, runtime/childjob.py) and the webhook
certificates (webhooks/certissue.py).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
# An extension and whether it is critical, in the order it goes into the certificate.
Extension = tuple[x509.ExtensionType, bool]


def ec_key() -> ec.EllipticCurvePrivateKey:
    """A P-256 key."""
    return ec.generate_private_key(ec.SECP256R1())


def rsa_key() -> rsa.RSAPrivateKey:
    """A 2048-bit RSA key (public exponent 65537)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def subject_name(
    common_name: str, organization: str | None = None, *, organization_first: bool = False
) -> x509.Name:
    """A subject of a common name and, optionally, an organisation. The dev cluster's Kubernetes
    certificates list the organisation first, the webhook certificates the common name first."""
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        org = x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)
        attributes.insert(0 if organization_first else 1, org)
    return x509.Name(attributes)


@dataclass(frozen=True)
class Signer:
    """The CA that signs a certificate: its subject becomes the certificate's issuer."""

    name: x509.Name
    key: PrivateKey


def issue(
    subject: x509.Name,
    key: PrivateKey,
    *,
    now: dt.datetime,
    backdate: dt.timedelta,
    validity: dt.timedelta,
    extensions: Sequence[Extension] = (),
    signer: Signer | None = None,
) -> x509.Certificate:
    """A certificate for `key`'s public half with a random serial, valid from `now - backdate` (so
    a peer whose clock is a little behind accepts it) to `now + validity`, signed with SHA-256 by
    `signer`, or by `key` itself when there is none (self-signed)."""
    issuer = signer or Signer(subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - backdate)
        .not_valid_after(now + validity)
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer.key, hashes.SHA256())


def ca_extensions(*, digital_signature: bool) -> list[Extension]:
    """A CA that signs certificates and CRLs; the dev cluster's CA may also sign directly."""
    usage = x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    return [(x509.BasicConstraints(ca=True, path_length=None), True), (usage, True)]


def not_a_ca() -> Extension:
    return x509.BasicConstraints(ca=False, path_length=None), True


def extended_usage(usage: x509.ObjectIdentifier) -> Extension:
    """Server or client authentication (`ExtendedKeyUsageOID.SERVER_AUTH` / `CLIENT_AUTH`)."""
    return x509.ExtendedKeyUsage([usage]), False


def alt_names(dns_names: Iterable[str], ip_addresses: Iterable[str] = ()) -> Extension:
    """The names a client verifies: DNS names first, then IP addresses."""
    names: list[x509.GeneralName] = [x509.DNSName(dns) for dns in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    return x509.SubjectAlternativeName(names), False


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(
    key: PrivateKey,
    private_format: serialization.PrivateFormat = serialization.PrivateFormat.TraditionalOpenSSL,
) -> bytes:
    """Unencrypted PEM; traditional ("EC/RSA PRIVATE KEY") unless the caller asks for PKCS#8."""
    return key.private_bytes(serialization.Encoding.PEM, private_format, serialization.NoEncryption())


def self_signed_pair(host: str = "localhost") -> tuple[bytes, bytes]:
    """The metrics server's self-signed serving certificate and key (PEM), valid for one year."""
    key = ec_key()
    cert = issue(
        subject_name(host),
        key,
        now=dt.datetime.now(dt.UTC),
        backdate=dt.timedelta(minutes=5),
        validity=dt.timedelta(days=365),
        extensions=[alt_names([host], ["127.0.0.1"])],
    )
    return cert_pem(cert), key_pem(key, serialization.PrivateFormat.PKCS8)


def job(payload: dict[str, str]) -> dict[str, str]:
    """`self_signed_pair` for a child process: {"host"} -> {"cert", "key"} (runtime/childjob.py)."""
    cert, key = self_signed_pair(payload.get("host", "localhost"))
    return {"cert": cert.decode(), "key": key.decode()}
