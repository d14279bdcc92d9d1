"""The Configuration's tls block: Go names resolved to ids, upstream's start-up errors."""

import ssl

import pytest

from leaderworkerset.api.config import ConfigError, TLSOptions
from leaderworkerset.api.tls import SECURE_CIPHER_SUITES, TLS_VERSIONS, TLSSettings, parse_tls_options

PREFERRED = " ".join(sorted(SECURE_CIPHER_SUITES))


@pytest.mark.parametrize(
    ("options", "want"),
    [
        pytest.param(None, None, id="no tls block"),
        pytest.param(TLSOptions(), TLSSettings(), id="empty block keeps library defaults"),
        pytest.param(TLSOptions(min_version="VersionTLS12"), TLSSettings("TLSv1_2"), id="tls 1.2"),
        pytest.param(TLSOptions(min_version="VersionTLS13"), TLSSettings("TLSv1_3"), id="tls 1.3"),
        pytest.param(
            TLSOptions(
                cipher_suites=["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA"]
            ),
            TLSSettings(cipher_suite_ids=(0xC02F, 0x002F)),
            id="secure and insecure names are both accepted, order kept",
        ),
        pytest.param(
            TLSOptions(cipher_suites=["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"]),
            TLSSettings(cipher_suite_ids=(0xCCA8,)),
            id="legacy chacha alias",
        ),
    ],
)
def test_parse_tls_options(options: TLSOptions | None, want: TLSSettings | None) -> None:
    assert parse_tls_options(options) == want


@pytest.mark.parametrize(
    ("options", "want_message"),
    [
        pytest.param(
            TLSOptions(min_version="VersionTLS13", cipher_suites=["TLS_AES_128_GCM_SHA256"]),
            "cipher suites may not be specified when minVersion is 'VersionTLS13'",
            id="ciphers with tls 1.3",
        ),
        pytest.param(
            TLSOptions(min_version="VersionTLS10"),
            "invalid minVersion. Please use VersionTLS12 or VersionTLS13",
            id="tls 1.0 refused",
        ),
        pytest.param(
            TLSOptions(min_version="TLS12"),
            'invalid minVersion: unknown tls version "TLS12". Please use VersionTLS12 or VersionTLS13',
            id="unknown version name",
        ),
        pytest.param(
            TLSOptions(cipher_suites=["NOPE"]),
            f"invalid cipher suites: Cipher suite NOPE not supported or doesn't exist. "
            f"Please use the secure cipher names: [{PREFERRED}]",
            id="unknown cipher",
        ),
        pytest.param(
            TLSOptions(min_version="VersionTLS11", cipher_suites=["NOPE"]),
            "invalid minVersion. Please use VersionTLS12 or VersionTLS13\n"
            f"invalid cipher suites: Cipher suite NOPE not supported or doesn't exist. "
            f"Please use the secure cipher names: [{PREFERRED}]",
            id="both problems joined",
        ),
    ],
)
def test_parse_tls_options_errors(options: TLSOptions, want_message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_tls_options(options)
    assert str(err.value) == want_message


def test_version_names_are_ssl_members() -> None:
    for member in TLS_VERSIONS.values():
        assert isinstance(getattr(ssl.TLSVersion, member), ssl.TLSVersion)
