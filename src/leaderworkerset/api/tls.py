"""The ``tls`` block of the Configuration: Go's TLS version and cipher-suite names, checked the way
upstream's manager checks them at start-up.

Names follow Go's ``crypto/tls`` (as accepted by component-base's ``--tls-cipher-suites`` flag);
they are resolved to IANA cipher-suite ids, which the runtime matches against the ids OpenSSL
reports (``ssl.SSLContext.get_ciphers()``) to build a Python TLS context.
"""

from dataclasses import dataclass
from typing import Final

from leaderworkerset.api.config import ConfigError, TLSOptions

# Go 1.26 tls.CipherSuites(): the suites Go considers secure, plus two legacy aliases that
# component-base keeps for backward compatibility.
SECURE_CIPHER_SUITES: Final[dict[str, int]] = {
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": 0xC009,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": 0xC00A,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": 0xC013,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": 0xC014,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": 0xCCA9,
}

# Go 1.26 tls.InsecureCipherSuites(): still accepted by name, never suggested.
INSECURE_CIPHER_SUITES: Final[dict[str, int]] = {
    "TLS_RSA_WITH_RC4_128_SHA": 0x0005,
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": 0x000A,
    "TLS_RSA_WITH_AES_128_CBC_SHA": 0x002F,
    "TLS_RSA_WITH_AES_256_CBC_SHA": 0x0035,
    "TLS_RSA_WITH_AES_128_CBC_SHA256": 0x003C,
    "TLS_RSA_WITH_AES_128_GCM_SHA256": 0x009C,
    "TLS_RSA_WITH_AES_256_GCM_SHA384": 0x009D,
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": 0xC007,
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": 0xC011,
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": 0xC012,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": 0xC023,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": 0xC027,
}

# Go version names → ``ssl.TLSVersion`` member names.
TLS_VERSIONS: Final[dict[str, str]] = {
    "VersionTLS10": "TLSv1",
    "VersionTLS11": "TLSv1_1",
    "VersionTLS12": "TLSv1_2",
    "VersionTLS13": "TLSv1_3",
}
_TLS13: Final = "VersionTLS13"
_TOO_OLD: Final = ("VersionTLS10", "VersionTLS11")
_USE_MODERN: Final = "Please use VersionTLS12 or VersionTLS13"


@dataclass(frozen=True)
class TLSSettings:
    """Parsed ``tls`` options; ``None``/empty means "library default", as in Go."""

    min_version: str | None = None
    cipher_suite_ids: tuple[int, ...] = ()


def _min_version(name: str) -> tuple[str | None, str | None]:
    """(ssl.TLSVersion member name, error)."""
    if not name:
        return None, None
    if name in _TOO_OLD:
        return None, f"invalid minVersion. {_USE_MODERN}"
    if name not in TLS_VERSIONS:
        return None, f'invalid minVersion: unknown tls version "{name}". {_USE_MODERN}'
    return TLS_VERSIONS[name], None


def _cipher_ids(names: list[str]) -> tuple[tuple[int, ...], str | None]:
    ids = []
    for name in names:
        cipher_id = SECURE_CIPHER_SUITES.get(name, INSECURE_CIPHER_SUITES.get(name))
        if cipher_id is None:
            preferred = " ".join(sorted(SECURE_CIPHER_SUITES))
            return (), (
                f"invalid cipher suites: Cipher suite {name} not supported or doesn't exist. "
                f"Please use the secure cipher names: [{preferred}]"
            )
        ids.append(cipher_id)
    return tuple(ids), None


def parse_tls_options(options: TLSOptions | None) -> TLSSettings | None:
    """Check and resolve the ``tls`` block; raises :class:`ConfigError` with upstream's messages
    (several problems are joined with newlines, like Go's ``errors.Join``)."""
    if options is None:
        return None
    if options.min_version == _TLS13 and options.cipher_suites:
        raise ConfigError("cipher suites may not be specified when minVersion is 'VersionTLS13'")
    version, version_error = _min_version(options.min_version)
    ids, cipher_error = _cipher_ids(options.cipher_suites or [])
    errors = [e for e in (version_error, cipher_error) if e is not None]
    if errors:
        raise ConfigError("\n".join(errors))
    return TLSSettings(min_version=version, cipher_suite_ids=ids)
