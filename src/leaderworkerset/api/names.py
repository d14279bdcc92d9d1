"""Kubernetes name rules (apimachinery ``util/validation``) with upstream's exact error wording.

These live in ``api`` because the configuration validation here needs them and ``api`` may import no
other layer; webhooks and core can (and should) reuse them from here.
"""

import re
from typing import Final

DNS1035_LABEL_MAX_LENGTH: Final = 63
DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"

_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT + r"\Z")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT + r"\Z")
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT + r"\Z")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery ``RegexError``: the message, then examples and the regex in parentheses."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _check(value: str, max_length: int, pattern: re.Pattern[str], regex_message: str) -> list[str]:
    errors = []
    if len(value) > max_length:
        errors.append(max_len_error(max_length))
    if pattern.match(value) is None:
        errors.append(regex_message)
    return errors


_DNS1123_LABEL_MSG: Final = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
_DNS1123_SUBDOMAIN_MSG: Final = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_DNS1035_LABEL_MSG: Final = regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character",
    _DNS1035_LABEL_FMT,
    "my-name",
    "abc-123",
)


def is_dns1123_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 label (empty when valid)."""
    return _check(value, DNS1123_LABEL_MAX_LENGTH, _DNS1123_LABEL_RE, _DNS1123_LABEL_MSG)


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 subdomain (empty when valid)."""
    return _check(value, DNS1123_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN_RE, _DNS1123_SUBDOMAIN_MSG)


def is_dns1035_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1035 label (empty when valid)."""
    return _check(value, DNS1035_LABEL_MAX_LENGTH, _DNS1035_LABEL_RE, _DNS1035_LABEL_MSG)
