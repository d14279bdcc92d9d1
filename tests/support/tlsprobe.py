"""Which certificate a TLS server presents to a new handshake: how the rotation tests tell that a
webhook server has picked up a new serving pair (on 127.0.0.1, or at a manager pod's address)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding


async def served_certificate(host: str, port: int, ca: bytes, server_hostname: str | None = None) -> bytes:
    """The certificate (DER) a new handshake with `host:port` presents, verified against `ca` and,
    when given, `server_hostname` (else `host` itself must be in the certificate)."""
    context = ssl.create_default_context(cadata=ca.decode())
    _, writer = await asyncio.open_connection(
        host, port, ssl=context, server_hostname=server_hostname or host
    )
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
        assert der is not None
        return bytes(der)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()


def der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)


async def serves(host: str, port: int, pem: bytes, ca: bytes, server_hostname: str | None = None) -> bool:
    """Whether a new handshake presents `pem`; a certificate `ca` does not trust counts as no."""
    try:
        return await served_certificate(host, port, ca, server_hostname) == der(pem)
    except ssl.SSLCertVerificationError:
        return False
