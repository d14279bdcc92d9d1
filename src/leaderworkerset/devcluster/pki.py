"""Certificates for a local control plane: a CA, the apiserver's serving
certificate, an admin client certificate (group ``system:masters``), the
service-account signing key pair, the aggregation layer's front-proxy CA and
client certificate (as kubeadm lays them out), and a serving certificate for
kwok's simulated kubelet endpoint on 127.0.0.1; built by runtime/certificates.py."""

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
FRONT_PROXY_CLIENT = "front-proxy-client"


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
    front_proxy_ca_cert: Path
    front_proxy_client_cert: Path
    front_proxy_client_key: Path
    kubelet_cert: Path
    kubelet_key: Path


def _write_key(path: Path, key: certificates.PrivateKey) -> None:
    path.write_bytes(certificates.key_pem(key))
    path.chmod(0o600)


def generate(directory: Path) -> ClusterPKI:
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def authority(name: str) -> tuple[certificates.Signer, x509.Certificate]:
        key = certificates.ec_key()
        signer = certificates.Signer(certificates.subject_name(name), key)
        cert = certificates.issue(
            signer.name,
            key,
            now=now,
            backdate=_BACKDATE,
            validity=_VALIDITY,
            extensions=certificates.ca_extensions(digital_signature=True),
        )
        return signer, cert

    ca, ca_cert = authority("lws-local-ca")
    ca_key = ca.key

    def leaf(
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        san: certificates.Extension | None,
        signer: certificates.Signer = ca,
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = certificates.ec_key()
        extensions = [
            certificates.not_a_ca(),
            certificates.extended_usage(usage),
            *([san] if san is not None else []),
        ]
        cert = certificates.issue(
            subject,
            key,
            now=now,
            backdate=_BACKDATE,
            validity=_VALIDITY,
            extensions=extensions,
            signer=signer,
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
    # The aggregation layer: kube-apiserver proxies to an extension API server (metrics-server) with
    # this client certificate and X-Remote-User headers, which the extension trusts only from a
    # certificate of this separate CA (as kubeadm sets it up).
    front, front_ca_cert = authority("lws-local-front-proxy-ca")
    proxy_key, proxy_cert = leaf(
        certificates.subject_name(FRONT_PROXY_CLIENT), ExtendedKeyUsageOID.CLIENT_AUTH, None, front
    )
    # kwok serves the kubelet's /metrics/resource for every fake node on 127.0.0.1 (see
    # ClusterOptions.kubelet_metrics); metrics-server verifies it against the cluster CA.
    kubelet_key, kubelet_cert = leaf(
        certificates.subject_name("kwok-kubelet"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        certificates.alt_names(("localhost",), ("127.0.0.1",)),
    )

    pki = ClusterPKI(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        server_cert=directory / "apiserver.crt",
        server_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
        front_proxy_ca_cert=directory / "front-proxy-ca.crt",
        front_proxy_client_cert=directory / "front-proxy-client.crt",
        front_proxy_client_key=directory / "front-proxy-client.key",
        kubelet_cert=directory / "kubelet.crt",
        kubelet_key=directory / "kubelet.key",
    )
    pki.ca_cert.write_bytes(certificates.cert_pem(ca_cert))
    _write_key(pki.ca_key, ca_key)
    pki.server_cert.write_bytes(certificates.cert_pem(server_cert))
    _write_key(pki.server_key, server_key)
    pki.admin_cert.write_bytes(certificates.cert_pem(admin_cert))
    _write_key(pki.admin_key, admin_key)
    _write_key(pki.sa_key, sa_key)
    pki.front_proxy_ca_cert.write_bytes(certificates.cert_pem(front_ca_cert))
    pki.front_proxy_client_cert.write_bytes(certificates.cert_pem(proxy_cert))
    _write_key(pki.front_proxy_client_key, proxy_key)
    pki.kubelet_cert.write_bytes(certificates.cert_pem(kubelet_cert))
    _write_key(pki.kubelet_key, kubelet_key)
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
