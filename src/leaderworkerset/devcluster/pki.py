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
# Loopback, the real nodes' bridge address and the `kubernetes` Service's ClusterIP (realnodes/addresses.py).
_SERVER_IPS = ("127.0.0.1", "198.18.0.1", "198.19.0.1")


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


def issue_client(pki: ClusterPKI, name: str, common_name: str, organization: str) -> tuple[Path, Path]:
    """A client certificate signed by the cluster's CA (e.g. a kubelet's `system:node:<name>` in
    `system:nodes`), written beside the others as <name>.crt/.key; returns (cert, key)."""
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{pki.ca_key}: expected an EC key")
    signer = certificates.Signer(ca_cert.subject, ca_key)
    key = certificates.ec_key()
    cert = certificates.issue(
        certificates.subject_name(common_name, organization, organization_first=True),
        key,
        now=datetime.datetime.now(datetime.UTC),
        backdate=_BACKDATE,
        validity=_VALIDITY,
        extensions=[certificates.not_a_ca(), certificates.extended_usage(ExtendedKeyUsageOID.CLIENT_AUTH)],
        signer=signer,
    )
    cert_path, key_path = pki.ca_cert.parent / f"{name}.crt", pki.ca_cert.parent / f"{name}.key"
    cert_path.write_bytes(certificates.cert_pem(cert))
    _write_key(key_path, key)
    return cert_path, key_path
