"""`lws cluster up|bin-dir --kubernetes-version`: a version outside the window is refused before
anything is built or started, naming the option and the window; `lws cluster tool` likewise refuses a
name that is not one of the tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from leaderworkerset.cli.cluster import app
from leaderworkerset.devcluster import tools


@pytest.mark.parametrize("command", [["up"], ["bin-dir"]])
def test_an_unsupported_version_is_refused_with_the_window(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWS_CACHE_DIR", str(tmp_path))  # nothing may be built or started here
    result = CliRunner().invoke(app, [*command, "--kubernetes-version", "1.33"])
    assert result.exit_code != 0
    # typer may frame the error in a box that wraps lines: compare the words only.
    words = " ".join(result.output.replace("│", " ").split())
    assert "--kubernetes-version" in words
    assert "'1.33' is not supported" in words
    assert "choose one of 1.34, 1.35, 1.36, 1.37" in words
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_tool_is_refused_with_the_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWS_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["tool", "kubectl"])
    assert result.exit_code != 0
    words = " ".join(result.output.replace("│", " ").split())
    assert f"'kubectl' is not a tool; choose one of {', '.join(tools.TOOLS)}" in words
    assert list(tmp_path.iterdir()) == []
