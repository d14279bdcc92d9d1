"""Where the upstream compatibility data lives, found the same way by every test.

Upstream's CRDs, samples, examples and webhook configurations are not part of this repository: they
sit beside it, in ``../shared/upstream`` relative to the repository root. ``LWS_UPSTREAM_DIR``
overrides the location. A test that needs the data and cannot find it never passes: it fails under
CI (``CI`` set), where the data is always laid out, and is skipped with the path and the reason
elsewhere, so a developer without the data still gets a loud, named skip.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final, NoReturn

import pytest

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
ENV_VAR: Final = "LWS_UPSTREAM_DIR"


def upstream_dir() -> Path:
    """The upstream data directory (it may not exist; see `require`)."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else (REPO_ROOT.parent / "shared" / "upstream").resolve()


def missing(what: Path) -> NoReturn:
    """Fail (under CI) or skip (elsewhere) a test whose upstream data is absent, naming it."""
    reason = (
        f"upstream data not found: {what} (lay out ../shared/upstream beside the repository or set {ENV_VAR})"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def require(*parts: str) -> Path:
    """The path of an upstream file or folder, or a loud fail/skip when it is absent."""
    path = upstream_dir().joinpath(*parts)
    if not path.exists():
        missing(path)
    return path


def files(folder: str, pattern: str = "*.yaml") -> list[Path]:
    """Files of an upstream folder, sorted; empty when the folder is absent (see `params`)."""
    path = upstream_dir() / folder
    return sorted(path.glob(pattern)) if path.is_dir() else []


def params(cases: list[Any], *, minimum: int, what: str) -> list[Any]:
    """Parameters for a data-driven test over upstream data that cannot shrink silently.

    With fewer than ``minimum`` cases (the data is absent or was cut down) the list holds one
    placeholder case instead; the test calls `check_case` first, which turns it into a loud fail
    (under CI) or skip, so the test never passes vacuously on an empty parameter set.
    """
    if len(cases) >= minimum:
        return cases
    reason = (
        f"only {len(cases)} {what} found under {upstream_dir()} (at least {minimum} expected; "
        f"lay out ../shared/upstream beside the repository or set {ENV_VAR})"
    )
    return [pytest.param(ShortData(reason), id=f"missing-{what.replace(' ', '-')}")]


class ShortData:
    """The placeholder case of `params`: the upstream data behind a parametrized test is short."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def check_case(case: Any) -> None:
    """Call first in a test parametrized by `params`: the placeholder fails (CI) or skips, loudly."""
    if isinstance(case, ShortData):
        if os.environ.get("CI"):
            pytest.fail(case.reason)
        pytest.skip(case.reason)
