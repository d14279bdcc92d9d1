"""Jobs the manager hands to a child process, so that it never loads `cryptography` itself."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from leaderworkerset.runtime import childjob
from leaderworkerset.runtime.metricsserver import self_signed_pair

SELF_SIGNED = "leaderworkerset.runtime.certificates"


def test_a_job_answers_from_a_child(tmp_path: Path) -> None:
    answer = childjob.call(SELF_SIGNED, {"host": "localhost"})
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text(answer["cert"])
    key.write_text(answer["key"])
    ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)


async def test_the_async_call_gives_the_same_kind_of_answer() -> None:
    answer = await childjob.call_async(SELF_SIGNED, {"host": "localhost"})
    assert answer["cert"].startswith("-----BEGIN CERTIFICATE-----")
    assert answer["key"].startswith("-----BEGIN PRIVATE KEY-----")


def test_the_metrics_pair_comes_from_a_child() -> None:
    cert, key = self_signed_pair()
    assert cert.startswith(b"-----BEGIN CERTIFICATE-----")
    assert key.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_a_failing_job_raises_with_the_childs_error() -> None:
    with pytest.raises(childjob.ChildJobError, match=r"AttributeError.*job"):
        childjob.call("leaderworkerset.api.constants", {})


async def test_a_failing_async_job_raises_with_the_childs_error() -> None:
    with pytest.raises(childjob.ChildJobError, match="exited with 1"):
        await childjob.call_async("leaderworkerset.api.constants", {})


def test_only_this_packages_modules_run() -> None:
    with pytest.raises(ValueError, match="this package only"):
        childjob.call("os", {})
