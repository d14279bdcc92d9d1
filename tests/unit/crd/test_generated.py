"""The committed manifests are exactly what the generator produces (deploy/ and the chart hold the same)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from leaderworkerset.crd.generate import DEFAULT_OUTPUTS, render_all
from leaderworkerset.crd.packaged import CRD_FILES, crd_documents, crd_texts

PACKAGED, DEPLOY, CHART = DEFAULT_OUTPUTS


@functools.cache
def _rendered() -> dict[str, str]:
    return render_all()


@pytest.mark.parametrize(
    "directory",
    [
        pytest.param(PACKAGED, id="packaged"),
        pytest.param(DEPLOY, id="deploy"),
        pytest.param(CHART, id="chart"),
    ],
)
@pytest.mark.parametrize("name", [pytest.param(n, id=n.removesuffix(".yaml")) for n in CRD_FILES])
def test_committed_manifest_is_current(directory: Path, name: str) -> None:
    current = (directory / name).read_text(encoding="utf-8") == _rendered()[name]
    assert current, f"{directory / name} is stale: run `uv run python -m leaderworkerset.crd.generate`"


def test_generator_writes_exactly_the_packaged_files() -> None:
    assert sorted(_rendered()) == sorted(CRD_FILES)
    assert sorted(p.name for p in PACKAGED.glob("*.yaml")) == sorted(CRD_FILES)


def test_packaged_documents_load_in_install_order() -> None:
    kinds = [doc["spec"]["names"]["kind"] for doc in crd_documents()]
    assert kinds == ["LeaderWorkerSet", "DisaggregatedSet", "DisaggregatedSetRoleScaler"]
    assert all(text.startswith("---\n") for text in crd_texts())
