"""The webhook certificates' generation and renew decision: pure functions of the stored
pair, the names to cover and the time, run in a child process (`job`, runtime/childjob.py) so that
the manager never loads `cryptography`. `webhooks/certs.py` keeps the Secret, the cert dir and the
caBundles in step with what this decides.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from leaderworkerset.api import constants as c
from leaderworkerset.runtime import certificates
from leaderworkerset.webhooks.certs import CertArtifacts, CertConfig, Ensured, parse_ensure_request

CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
_CLOCK_SKEW = dt.timedelta(hours=1)


def _name(common_name: str) -> x509.Name:
    return certificates.subject_name(common_name, c.CERT_CA_ORGANIZATION)


# X.509 caps a common name at 64 characters; clients verify the SANs, so a shorter CN is harmless.
_MAX_COMMON_NAME = 64


def _common_name(config: CertConfig) -> str:
    return (
        config.dns_name
        if len(config.dns_name) <= _MAX_COMMON_NAME
        else config.service_name[:_MAX_COMMON_NAME]
    )


def generate_ca(now: dt.datetime) -> tuple[bytes, bytes]:
    """A self-signed CA certificate and key (PEM)."""
    key = certificates.rsa_key()
    cert = certificates.issue(
        _name(c.CERT_CA_NAME),
        key,
        now=now,
        backdate=_CLOCK_SKEW,
        validity=CA_VALIDITY,
        extensions=certificates.ca_extensions(digital_signature=False),
    )
    return certificates.cert_pem(cert), certificates.key_pem(key)


def generate_serving(
    ca_cert_pem: bytes, ca_key_pem: bytes, config: CertConfig, now: dt.datetime
) -> tuple[bytes, bytes]:
    """A serving certificate for the config's DNS names and IPs, signed by the CA."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    assert isinstance(ca_key, rsa.RSAPrivateKey)
    key = certificates.rsa_key()
    cert = certificates.issue(
        _name(_common_name(config)),
        key,
        now=now,
        backdate=_CLOCK_SKEW,
        validity=SERVING_VALIDITY,
        extensions=[
            certificates.alt_names(config.dns_names, config.ip_addresses),
            certificates.extended_usage(ExtendedKeyUsageOID.SERVER_AUTH),
            certificates.not_a_ca(),
        ],
        signer=certificates.Signer(ca_cert.subject, ca_key),
    )
    return certificates.cert_pem(cert), certificates.key_pem(key)


def generate(config: CertConfig, now: dt.datetime) -> CertArtifacts:
    ca_cert, ca_key = generate_ca(now)
    cert, key = generate_serving(ca_cert, ca_key, config, now)
    return CertArtifacts(ca_cert, ca_key, cert, key)


def _expires_soon(cert: x509.Certificate, now: dt.datetime, renew_before: dt.timedelta) -> bool:
    return cert.not_valid_after_utc - renew_before <= now or cert.not_valid_before_utc > now


def needs_renewal(artifacts: CertArtifacts | None, config: CertConfig, now: dt.datetime) -> bool:
    """True when the stored pair is missing, unparsable, not for our names, not signed by the CA,
    or close to expiry (CA or serving certificate)."""
    if artifacts is None:
        return True
    try:
        ca = x509.load_pem_x509_certificate(artifacts.ca_cert)
        cert = x509.load_pem_x509_certificate(artifacts.cert)
        serialization.load_pem_private_key(artifacts.key, password=None)
        cert.verify_directly_issued_by(ca)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return True
    names = set(sans.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    if not set(config.dns_names) <= names or not set(config.ip_addresses) <= ips:
        return True
    return _expires_soon(ca, now, config.renew_before) or _expires_soon(cert, now, config.renew_before)


def ensure(
    artifacts: CertArtifacts | None, config: CertConfig, now: dt.datetime
) -> tuple[CertArtifacts, bool]:
    """The artifacts to use and whether they changed; keeps a still-valid CA when only the serving
    certificate must be renewed, so clients holding the old bundle keep trusting us."""
    if artifacts is not None and not needs_renewal(artifacts, config, now):
        return artifacts, False
    if artifacts is not None and _ca_usable(artifacts, config, now):
        cert, key = generate_serving(artifacts.ca_cert, artifacts.ca_key, config, now)
        return CertArtifacts(artifacts.ca_cert, artifacts.ca_key, cert, key), True
    return generate(config, now), True


def _ca_usable(artifacts: CertArtifacts, config: CertConfig, now: dt.datetime) -> bool:
    try:
        ca = x509.load_pem_x509_certificate(artifacts.ca_cert)
        serialization.load_pem_private_key(artifacts.ca_key, password=None)
    except (ValueError, TypeError):
        return False
    return not _expires_soon(ca, now, config.renew_before)


def renew_at(artifacts: CertArtifacts, config: CertConfig) -> dt.datetime:
    """The first moment `needs_renewal` turns true for a pair it passes now: the CA or the serving
    certificate comes within `renew_before` of expiring (nothing else it checks changes with time)."""
    ca = x509.load_pem_x509_certificate(artifacts.ca_cert)
    cert = x509.load_pem_x509_certificate(artifacts.cert)
    return min(ca.not_valid_after_utc, cert.not_valid_after_utc) - config.renew_before


def job(request: dict[str, Any]) -> dict[str, Any]:
    """`ensure` for a child process: `certs.ensure_request` in, `certs.Ensured` out."""
    current, config, now = parse_ensure_request(request)
    artifacts, changed = ensure(current, config, now)
    return Ensured(artifacts, changed, renew_at(artifacts, config)).to_answer()
