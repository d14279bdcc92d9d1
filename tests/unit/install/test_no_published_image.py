"""While no image is published, `lws install` without --image refuses (before touching any cluster) and
says how to build and load one; the chart has no default repository and fails with the same advice
(rendered with a real helm in tests/integration/install/test_chart.py); the plain manifests name a
placeholder that can never be pulled from anyone's registry."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from leaderworkerset import __version__
from leaderworkerset.cli.crds import crds_command
from leaderworkerset.cli.install import install_command
from leaderworkerset.install import image
from leaderworkerset.install.manifests import InstallOptions, deployment

REPO = Path(__file__).resolve().parents[3]


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("crds")(crds_command)
    app.command("install")(install_command)
    return app


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


@pytest.mark.parametrize("args", [pytest.param([], id="install"), pytest.param(["--dry-run"], id="dry-run")])
def test_install_without_an_image_refuses_and_says_how_to_get_one(no_cluster: None, args: list[str]) -> None:
    result = CliRunner().invoke(_cli(), ["install", *args])
    assert result.exit_code == 1
    assert "lws install: no manager image is published yet" in result.output
    for advice in (
        "hack/build-image.sh",
        "ctr -n k8s.io images import",
        "docker://REGISTRY/",
        "--image IMAGE",
    ):
        assert advice in result.output, advice
    # Refused before any cluster was looked for.
    assert "kubeconfig" not in result.output


def test_crds_only_needs_no_image(no_cluster: None) -> None:
    result = CliRunner().invoke(_cli(), ["install", "--crds-only"])
    assert result.exit_code == 1
    assert "no usable kubeconfig" in result.output


def test_a_published_image_becomes_the_default(no_cluster: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "PUBLISHED_REPOSITORY", "registry.example/lws-python")
    assert image.default_image() == f"registry.example/lws-python:v{__version__}"
    assert image.manifest_image() == image.default_image()
    result = CliRunner().invoke(_cli(), ["install"])
    assert "no usable kubeconfig" in result.output  # past the image check


def test_unpublished_manifests_name_an_unpullable_placeholder() -> None:
    assert image.PUBLISHED_REPOSITORY is None, "published: update docs/install.md and the chart's values"
    (container,) = deployment(InstallOptions())["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image.PLACEHOLDER
    registry = image.PLACEHOLDER.split("/", 1)[0]
    assert registry.endswith(".invalid"), "RFC 2606: a host that never resolves"
    generated = (REPO / "deploy" / "manifests" / "install.yaml").read_text(encoding="utf-8")
    assert f"image: {image.PLACEHOLDER}\n" in generated


def test_the_chart_has_no_default_repository_and_requires_one() -> None:
    values = yaml.safe_load((REPO / "charts" / "lws" / "values.yaml").read_text(encoding="utf-8"))
    assert values["image"]["manager"]["repository"] == ""
    template = (REPO / "charts" / "lws" / "templates" / "manager" / "deployment.yaml").read_text()
    assert '{{ required (include "lws.noPublishedImage" .) .Values.image.manager.repository }}' in template
