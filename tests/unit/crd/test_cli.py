"""`lws crds` and `lws install` without a cluster: output and error handling."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from leaderworkerset.cli.crds import crds_command
from leaderworkerset.cli.install import install_command
from leaderworkerset.crd.packaged import crd_texts


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("crds")(crds_command)
    app.command("install")(install_command)
    return app


def test_crds_prints_every_manifest_as_one_yaml_stream() -> None:
    result = CliRunner().invoke(_cli(), ["crds"])
    assert result.exit_code == 0
    assert result.output == "".join(crd_texts())
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    kinds = [doc["kind"] for doc in yaml.load_all(result.output, Loader=loader)]
    assert kinds == ["CustomResourceDefinition"] * 3


def test_install_without_any_kubeconfig_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    result = CliRunner().invoke(_cli(), ["install", "--image", "example.test/lws:1"])
    assert result.exit_code == 1
    assert "no usable kubeconfig" in result.output


def test_install_rejects_a_missing_kubeconfig_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(_cli(), ["install", "--kubeconfig", str(tmp_path / "absent")])
    assert result.exit_code == 2
