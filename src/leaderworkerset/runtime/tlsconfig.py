"""Server TLS contexts from the Configuration's `tls` block (parsed by api/tls.py).

Go names cipher suites by IANA id; OpenSSL by its own names. `ssl.SSLContext.get_ciphers()` reports
each cipher's protocol-qualified id (0x0300XXXX for TLS), whose low 16 bits are the IANA id, so the
configured ids are mapped through it. As in Go, the cipher list only constrains TLS 1.2 and below.
Both the metrics server and the webhook server use `server_context`; HTTP/2 is never offered.

`shrink_tls_read_buffers` sizes the read buffer asyncio gives every TLS connection, client or server.
asyncio allocates 256 KiB per connection and fills it with zeros, so each open connection costs about
310 KiB of RSS; the manager keeps one per watch, one per pooled API connection, and one per connection
the API server opens to the webhooks (HTTP/1.1: one per review in flight, kept alive afterwards), about
50 after a burst. A TLS record carries at most 16 KiB, so a 16 KiB buffer still takes a whole record
per read; a connection then costs about 70 KiB.
"""

from __future__ import annotations

import asyncio.sslproto
import ssl
from collections.abc import Iterable

from leaderworkerset.api.tls import TLSSettings

# The largest TLS record's plaintext (RFC 8446 §5.1): one record per read.
TLS_READ_BUFFER = 16 * 1024


def shrink_tls_read_buffers(size: int = TLS_READ_BUFFER) -> bool:
    """Make asyncio's TLS connections opened from now on in this process read through a `size`-byte
    buffer. False where asyncio has no such knob (another event loop implementation, a later Python)."""
    protocol = asyncio.sslproto.SSLProtocol
    if not isinstance(getattr(protocol, "max_size", None), int):
        return False
    protocol.max_size = size
    return True


def openssl_cipher_names(context: ssl.SSLContext, iana_ids: Iterable[int]) -> list[str]:
    """OpenSSL names for the IANA ids, in the given order; ids OpenSSL does not offer are an error."""
    by_id = {cipher["id"] & 0xFFFF: cipher["name"] for cipher in context.get_ciphers()}
    names = []
    for iana_id in iana_ids:
        if iana_id not in by_id:
            raise ValueError(f"cipher suite 0x{iana_id:04X} is not available in this OpenSSL build")
        names.append(by_id[iana_id])
    return names


def apply_tls_settings(context: ssl.SSLContext, settings: TLSSettings | None) -> ssl.SSLContext:
    """Set the minimum version (default TLS 1.2, Go's server default) and the TLS ≤1.2 cipher list."""
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    if settings is None:
        return context
    if settings.min_version:
        context.minimum_version = ssl.TLSVersion[settings.min_version]
    if settings.cipher_suite_ids:
        context.set_ciphers(":".join(openssl_cipher_names(context, settings.cipher_suite_ids)))
    return context


def server_context(settings: TLSSettings | None = None) -> ssl.SSLContext:
    """A server-side context (certificates still to be loaded) honouring `settings`."""
    return apply_tls_settings(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), settings)
