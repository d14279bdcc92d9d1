"""Build outputs appear whole or not at all (shared by the control-plane and the tool builds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderworkerset.devcluster.build import COMPLETE_MARKER, BuildError, publish, staged_output
from leaderworkerset.devcluster.progress import StepError


def test_a_published_build_replaces_the_old_output(tmp_path: Path) -> None:
    out = tmp_path / "tool-v1"
    out.mkdir()
    (out / "stale").write_text("old")
    with staged_output(out) as tmp:
        (tmp / "tool").write_text("binary")
        publish(tmp, out, "built\n")
    assert sorted(p.name for p in out.iterdir()) == [COMPLETE_MARKER, "tool"]
    assert (out / COMPLETE_MARKER).read_text() == "built\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tool-v1"]


def test_a_failed_step_leaves_nothing_half_built(tmp_path: Path) -> None:
    out = tmp_path / "tool-v1"

    def build() -> None:
        with staged_output(out) as tmp:
            (tmp / "tool").write_text("partial")
            raise StepError("go build failed")

    with pytest.raises(BuildError, match="go build failed"):
        build()
    assert list(tmp_path.iterdir()) == []
