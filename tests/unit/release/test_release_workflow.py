"""The release workflow (.github/workflows/release.yaml), short of a forge: its tag trigger, its version
step run here against this repository (the tag must equal the package's and the chart's version), the
step that writes the published image into the packaged chart's values, and its platform list against
uv.lock (every locked runtime dependency has a CPython 3.11 wheel for each platform, since the image
build installs wheels only). actionlint checks the whole file in tests/integration/release."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.markers import Marker
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import parse_wheel_filename

from leaderworkerset import __version__

REPO = Path(__file__).resolve().parents[3]
WORKFLOW = REPO / ".github" / "workflows" / "release.yaml"
CHART = REPO / "charts" / "lws"
MACHINES = {
    "linux/amd64": "x86_64",
    "linux/arm64": "aarch64",
    "linux/s390x": "s390x",
    "linux/ppc64le": "ppc64le",
}


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def _step(workflow: dict[Any, Any], name: str) -> dict[str, Any]:
    (job,) = workflow["jobs"].values()
    found: dict[str, Any] = next(s for s in job["steps"] if s.get("name") == name)
    return found


def _run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # GitHub's default shell for `run:` on Linux.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_runs_on_version_tags_only(workflow: dict[Any, Any]) -> None:
    # YAML 1.1 reads the key `on` as True.
    assert workflow[True] == {"push": {"tags": ["v*"]}}


def test_chart_versions_follow_the_package() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["version"] == __version__
    assert chart["appVersion"] == f"v{__version__}", "the image tag the chart defaults to"


@pytest.mark.parametrize(
    ("tag", "ok"),
    [pytest.param(f"v{__version__}", True, id="matching"), pytest.param("v99.0.0", False, id="not-bumped")],
)
def test_version_step(workflow: dict[Any, Any], tmp_path: Path, tag: str, ok: bool) -> None:
    outputs = tmp_path / "outputs"
    outputs.touch()
    env = {
        "GITHUB_REF_NAME": tag,
        "GITHUB_REPOSITORY_OWNER": "Example-Org",
        "GITHUB_OUTPUT": str(outputs),
        "REGISTRY": workflow["env"]["REGISTRY"],
    }
    result = _run(_step(workflow, "Versions from the tag")["run"], REPO, env)
    if not ok:
        assert result.returncode == 1
        assert f"::error::tag {tag} but package {__version__}, chart {__version__}" in result.stdout
        return
    assert result.returncode == 0, result.stderr
    assert dict(line.split("=", 1) for line in outputs.read_text().splitlines()) == {
        "version": __version__,
        "image": "ghcr.io/example-org/lws-python",
        "charts": "oci://ghcr.io/example-org/charts",
    }


def test_the_packaged_chart_defaults_to_the_published_image(workflow: dict[Any, Any], tmp_path: Path) -> None:
    shutil.copytree(CHART, tmp_path / "charts" / "lws")
    image = "ghcr.io/example-org/lws-python"
    result = _run(_step(workflow, "Set the published image in the chart")["run"], tmp_path, {"IMAGE": image})
    assert result.returncode == 0, result.stderr
    before = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    after = yaml.safe_load((tmp_path / "charts" / "lws" / "values.yaml").read_text(encoding="utf-8"))
    before["image"]["manager"]["repository"] = image
    assert after == before


def _supported(machine: str) -> set[Tag]:
    # The Dockerfile's base (python:3.11-slim-bookworm): CPython 3.11, glibc 2.36.
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(36, 16, -1)]
    platforms += [f"manylinux2014_{machine}", f"linux_{machine}"]
    return {
        *cpython_tags(python_version=(3, 11), platforms=platforms),
        *compatible_tags(python_version=(3, 11), interpreter="cp311", platforms=platforms),
    }


def _runtime_packages(machine: str) -> dict[str, dict[str, Any]]:
    """The locked packages `uv sync --no-dev` installs on linux/<machine>, markers evaluated."""
    lock = tomllib.loads((REPO / "uv.lock").read_text(encoding="utf-8"))
    packages = {p["name"]: p for p in lock["package"]}
    env = {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": machine,
        "python_version": "3.11",
        "python_full_version": "3.11.14",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    seen: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, list[str]]] = [("leaderworkerset", [])]
    while todo:
        name, extras = todo.pop()
        package = packages[name]
        first = name not in seen
        seen[name] = package
        deps = list(package.get("dependencies", [])) if first else []
        for extra in extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        for dep in deps:
            if "marker" in dep and not Marker(dep["marker"]).evaluate({**env, "extra": ""}):
                continue
            todo.append((dep["name"], dep.get("extra", [])))
    seen.pop("leaderworkerset")
    return seen


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_lock_walk_finds_the_native_dependencies(machine: str) -> None:
    assert {"msgspec", "cryptography", "pyyaml", "aiohttp"} <= set(_runtime_packages(machine))


def _lacking_wheels(platform: str) -> set[str]:
    supported = _supported(MACHINES[platform])
    return {
        name
        for name, package in _runtime_packages(MACHINES[platform]).items()
        if not any(
            parse_wheel_filename(w["url"].rsplit("/", 1)[1])[3] & supported for w in package.get("wheels", [])
        )
    }


def test_every_release_platform_has_a_wheel_for_every_dependency(workflow: dict[Any, Any]) -> None:
    platforms = workflow["env"]["PLATFORMS"].split(",")
    assert platforms[:2] == ["linux/amd64", "linux/arm64"]
    gaps = {platform: lacking for platform in platforms if (lacking := _lacking_wheels(platform))}
    assert not gaps, f"no CPython 3.11 wheel (the build installs wheels only): {gaps}"


@pytest.mark.parametrize(
    ("platform", "missing"),
    [("linux/s390x", {"msgspec", "cryptography"}), ("linux/ppc64le", {"msgspec", "pyyaml"})],
)
def test_the_platforms_left_out_really_lack_wheels(platform: str, missing: set[str]) -> None:
    # What the workflow's comment says about s390x and ppc64le; when this fails, add them to PLATFORMS.
    assert _lacking_wheels(platform) == missing
