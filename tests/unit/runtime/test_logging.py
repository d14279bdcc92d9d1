"""structlog setup: JSON lines in a cluster, and the reconcile key bound on every line."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import structlog

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.controller import Controller, Result
from leaderworkerset.runtime.logging import configure_logging, in_cluster
from leaderworkerset.runtime.objects import ObjectKey


@pytest.fixture(autouse=True)
def reset_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


async def test_reconcile_lines_carry_the_object_key(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json=True)
    log = structlog.get_logger("test")

    async def reconcile(key: ObjectKey) -> Result | None:
        log.info("reconciling")
        return None

    await Controller("leaderworkerset", reconcile, clock=FakeClock()).process(ObjectKey("ns", "demo"))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]
    [line] = [entry for entry in lines if entry["msg"] == "reconciling"]
    assert line["controller"] == "leaderworkerset"
    assert line["namespace"] == "ns"
    assert line["name"] == "demo"
    assert line["level"] == "info"
    assert "reconcileID" in line
    assert "timestamp" in line


def test_level_filters(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json=True, level="warning")
    structlog.get_logger("test").info("quiet")
    structlog.get_logger("test").warning("loud")
    err = capsys.readouterr().err
    assert "loud" in err
    assert "quiet" not in err


@pytest.mark.parametrize(
    ("env", "want"),
    [pytest.param("10.0.0.1", True, id="in a pod"), pytest.param(None, False, id="local")],
)
def test_in_cluster_detection(monkeypatch: pytest.MonkeyPatch, env: str | None, want: bool) -> None:
    if env is None:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    else:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", env)
    assert in_cluster() == want


def test_console_tracebacks_are_plain_and_show_no_locals(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json=False)
    token = "s3cr3t-bearer-token"  # a local of the failing frame

    try:
        raise ValueError(f"bad value of length {len(token)}")
    except ValueError:
        structlog.get_logger("test").exception("Reconciler error")
    err = capsys.readouterr().err
    assert "Traceback (most recent call last):" in err
    assert "ValueError: bad value of length 19" in err
    assert token not in err
    assert "╭" not in err  # no rich panel
