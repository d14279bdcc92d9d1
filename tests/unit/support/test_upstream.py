"""The upstream-data finder: absent data is a loud skip (a failure under CI), never a pass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import upstream


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An upstream data directory with two sample files, selected through the environment."""
    (tmp_path / "samples").mkdir()
    for name in ("b.yaml", "a.yaml", "notes.txt"):
        (tmp_path / "samples" / name).write_text("{}\n")
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    return tmp_path


@dataclass(frozen=True)
class Absent:
    ci: str | None
    want_exception: type[BaseException]


ABSENT_CASES = [
    pytest.param(Absent(None, pytest.skip.Exception), id="developer machine skips"),
    pytest.param(Absent("true", pytest.fail.Exception), id="CI fails"),
]


def test_default_location_is_beside_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(upstream.ENV_VAR, raising=False)
    assert upstream.upstream_dir() == (upstream.REPO_ROOT.parent / "shared" / "upstream").resolve()
    assert (upstream.REPO_ROOT / "pyproject.toml").is_file()


def test_environment_variable_overrides_the_location(data: Path) -> None:
    assert upstream.upstream_dir() == data


def test_require_returns_a_present_path(data: Path) -> None:
    assert upstream.require("samples", "a.yaml") == data / "samples" / "a.yaml"


@pytest.mark.parametrize("case", ABSENT_CASES)
def test_require_of_absent_data_names_the_path(
    data: Path, monkeypatch: pytest.MonkeyPatch, case: Absent
) -> None:
    if case.ci is not None:
        monkeypatch.setenv("CI", case.ci)
    with pytest.raises(case.want_exception, match="upstream data not found") as raised:
        upstream.require("crds", "missing.yaml")
    assert str(data / "crds" / "missing.yaml") in str(raised.value)
    assert upstream.ENV_VAR in str(raised.value)


def test_files_are_sorted_and_filtered(data: Path) -> None:
    assert upstream.files("samples") == [data / "samples" / "a.yaml", data / "samples" / "b.yaml"]
    assert upstream.files("samples", "*.txt") == [data / "samples" / "notes.txt"]


def test_files_of_an_absent_folder_are_empty(data: Path) -> None:
    assert upstream.files("examples") == []


def test_params_with_enough_cases_are_unchanged(data: Path) -> None:
    cases = [pytest.param(1, id="one"), pytest.param(2, id="two")]
    assert upstream.params(cases, minimum=2, what="numbers") is cases
    for case in cases:
        assert upstream.check_case(case.values[0]) is None


@pytest.mark.parametrize("case", ABSENT_CASES)
@pytest.mark.parametrize("found", [0, 1], ids=["none found", "fewer than the minimum"])
def test_params_with_too_few_cases_become_one_loud_case(
    data: Path, monkeypatch: pytest.MonkeyPatch, case: Absent, found: int
) -> None:
    (placeholder,) = upstream.params([pytest.param(n) for n in range(found)], minimum=2, what="numbers")
    assert placeholder.id == "missing-numbers"
    if case.ci is not None:
        monkeypatch.setenv("CI", case.ci)
    with pytest.raises(case.want_exception, match=f"only {found} numbers found") as raised:
        upstream.check_case(placeholder.values[0])
    assert str(data) in str(raised.value)
    assert "at least 2 expected" in str(raised.value)
