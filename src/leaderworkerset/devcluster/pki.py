"""Certificates for a local control plane: a CA, the apiserver's serving
certificate, an admin client certificate (group ``system:masters``) and the
service-account signing key pair, built by runtime/certificates.py."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from leaderworkerset.runtime import certificates

_VALIDITY = datetime.timedelta(days=3650)
_BACKDATE = datetime.timedelta(minutes=5)
_SERVER_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
_SERVER_IPS = ("127.0.0.1", "10.0.0.1")


@dataclass(frozen=True)
class ClusterPKI:
    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _write_key(path: Path, key: certificates.PrivateKey) -> None:
    path.write_bytes(certificates.key_pem(key))
    path.chmod(0o600)


def generate(directory: Path) -> ClusterPKI:
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = certificates.ec_key()
    ca = certificates.Signer(certificates.subject_name("lws-local-ca"), ca_key)
    ca_cert = certificates.issue(
        ca.name,
        ca_key,
        now=now,
        backdate=_BACKDATE,
        validity=_VALIDITY,
        extensions=certificates.ca_extensions(digital_signature=True),
    )

    def leaf(
        subject: x509.Name, usage: x509.ObjectIdentifier, san: certificates.Extension | None
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = certificates.ec_key()
        extensions = [
            certificates.not_a_ca(),
            certificates.extended_usage(usage),
            *([san] if san is not None else []),
        ]
        cert = certificates.issue(
            subject, key, now=now, backdate=_BACKDATE, validity=_VALIDITY, extensions=extensions, signer=ca
        )
        return key, cert

    server_key, server_cert = leaf(
        certificates.subject_name("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        certificates.alt_names(_SERVER_DNS, _SERVER_IPS),
    )
    admin_key, admin_cert = leaf(
        certificates.subject_name("kubernetes-admin", "system:masters", organization_first=True),
        ExtendedKeyUsageOID.CLIENT_AUTH,
        None,
    )
    # Service-account tokens are signed with RSA, which every component accepts.
    sa_key = certificates.rsa_key()

    pki = ClusterPKI(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        server_cert=directory / "apiserver.crt",
        server_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )
    pki.ca_cert.write_bytes(certificates.cert_pem(ca_cert))
    _write_key(pki.ca_key, ca_key)
    pki.server_cert.write_bytes(certificates.cert_pem(server_cert))
    _write_key(pki.server_key, server_key)
    pki.admin_cert.write_bytes(certificates.cert_pem(admin_cert))
    _write_key(pki.admin_key, admin_key)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
