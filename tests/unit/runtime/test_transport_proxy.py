"""The transport's proxy for the API server comes from HTTPS_PROXY / HTTP_PROXY / NO_PROXY, read once."""

from __future__ import annotations

import pytest
from yarl import URL

from leaderworkerset.runtime.transport import env_proxy

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")
CASES = [
    pytest.param({}, "https://10.0.0.1:6443", None, id="no proxy configured"),
    pytest.param(
        {"HTTPS_PROXY": "http://proxy.test:3128"},
        "https://10.0.0.1:6443",
        "http://proxy.test:3128",
        id="HTTPS_PROXY for an https server",
    ),
    pytest.param(
        {"HTTP_PROXY": "http://proxy.test:3128"},
        "https://10.0.0.1:6443",
        None,
        id="HTTP_PROXY does not apply to an https server",
    ),
    pytest.param(
        {"HTTP_PROXY": "http://proxy.test:3128"},
        "http://127.0.0.1:8080",
        "http://proxy.test:3128",
        id="HTTP_PROXY for an http server",
    ),
    pytest.param(
        {"HTTPS_PROXY": "http://proxy.test:3128", "NO_PROXY": "api.test"},
        "https://api.test:6443",
        None,
        id="NO_PROXY exempts the server",
    ),
]
RAN: list[str] = []


@pytest.mark.parametrize(("env", "server", "want"), CASES)
def test_env_proxy(
    env: dict[str, str], server: str, want: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    proxy, _ = env_proxy(server)
    assert proxy == (URL(want) if want else None)
    RAN.append(server)


def test_proxy_credentials_are_split_off() -> None:
    with pytest.MonkeyPatch.context() as patch:
        for name in PROXY_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("HTTPS_PROXY", "http://user:secret@proxy.test:3128")
        proxy, auth = env_proxy("https://10.0.0.1:6443")
    assert proxy == URL("http://proxy.test:3128")
    assert auth is not None
    assert (auth.login, auth.password) == ("user", "secret")


def test_every_case_ran() -> None:
    assert len(RAN) == len(CASES) == 5
