"""actionlint (v1.7.12, built from its Go module and cached by leaderworkerset.devcluster.tools) passes
the release workflow, and does check it: the same file with a misspelt input of a popular action, or an
undefined step output, is refused. shellcheck and pyflakes are switched off so that the result does not
depend on what else is installed (`run:` scripts are exercised by tests/unit/release)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from leaderworkerset.devcluster import tools

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / ".github" / "workflows" / "release.yaml"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    return tools.ensure_tool(tools.ACTIONLINT)


def _lint(actionlint: Path, path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(actionlint), "-no-color", "-shellcheck=", "-pyflakes=", str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_release_workflow_passes(actionlint: Path) -> None:
    result = _lint(actionlint, WORKFLOW, REPO)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("good", "bad", "complaint"),
    [
        pytest.param("platforms: ${{", "platform: ${{", 'input "platform" is not defined', id="input"),
        pytest.param(
            "steps.version.outputs.image }}:v", "steps.version.output.image }}:v", "property", id="output"
        ),
    ],
)
def test_it_catches_mistakes(actionlint: Path, tmp_path: Path, good: str, bad: str, complaint: str) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert good in text
    broken = tmp_path / ".github" / "workflows" / "release.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text(text.replace(good, bad, 1), encoding="utf-8")
    result = _lint(actionlint, broken, tmp_path)
    assert result.returncode == 1, result.stdout
    assert complaint in result.stdout, result.stdout
