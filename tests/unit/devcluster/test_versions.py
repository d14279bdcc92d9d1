"""The supported Kubernetes window of the local control plane: how a version is named and keyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderworkerset.devcluster import versions

WINDOW = ("v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2", "v1.38.0-beta.0")


def test_the_window_ends_at_the_newest_pre_release_and_the_default_is_the_newest_release() -> None:
    assert versions.SUPPORTED_KUBERNETES_VERSIONS == WINDOW
    assert versions.NEWEST_SUPPORTED_VERSION == "v1.38.0-beta.0"
    # CI and `make test` stay on a release: a beta is chosen only by name.
    assert versions.KUBERNETES_VERSION == "v1.37.2"


@pytest.mark.parametrize("spelling", ["1.38", "v1.38", "v1.38.0-beta.0", "1.38.0-beta.0"])
def test_a_pre_release_is_named_by_its_minor_or_in_full(spelling: str) -> None:
    assert versions.resolve_kubernetes_version(spelling) == "v1.38.0-beta.0"


@pytest.mark.parametrize("spelling", ["1.36", "v1.36", "1.36.3", "v1.36.3", " 1.36 "])
def test_a_minor_or_a_full_version_names_the_built_patch(spelling: str) -> None:
    assert versions.resolve_kubernetes_version(spelling) == "v1.36.3"


def test_the_environment_chooses_when_no_version_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(versions.KUBERNETES_VERSION_ENV, "1.34")
    assert versions.resolve_kubernetes_version() == "v1.34.4"
    monkeypatch.delenv(versions.KUBERNETES_VERSION_ENV)
    assert versions.resolve_kubernetes_version() == "v1.37.2"


@pytest.mark.parametrize("spelling", ["1.33", "1.36.1", "1.38.0", "1.39", "latest"])
def test_a_version_outside_the_window_is_refused_with_the_window(spelling: str) -> None:
    with pytest.raises(
        versions.UnsupportedVersionError, match=r"choose one of 1\.34, 1\.35, 1\.36, 1\.37, 1\.38"
    ):
        versions.resolve_kubernetes_version(spelling)


def test_every_version_has_its_own_cache_key_that_names_it() -> None:
    keys = {versions.build_key("go1.26.8", v) for v in WINDOW}
    assert len(keys) == len(WINDOW)
    for version in WINDOW:
        key = versions.build_key("go1.26.8", version)
        assert versions.kubernetes_version_of(Path("/cache/bin") / key) == version


def test_every_version_has_its_wrapper_module() -> None:
    gomod = Path(versions.__file__).parent / "gomod" / "k8s"
    for version in WINDOW:
        go_mod = (gomod / versions.minor_of(version) / "go.mod").read_text()
        assert f"k8s.io/kubernetes {version}" in go_mod
        assert f"k8s.io/api => k8s.io/api v0.{version.removeprefix('v1.')}" in go_mod


@pytest.mark.parametrize(
    ("version", "minimum", "expected"),
    [
        ("v1.37.2", "v1.37", True),
        ("v1.36.3", "v1.37", False),
        ("v1.35.4", "v1.35.4", True),
        ("v1.35.3", "v1.35.4", False),
        ("v1.38.0-beta.0", "v1.37", True),
        # A minor's pre-release has that minor's gates and APIs.
        ("v1.38.0-beta.0", "v1.38", True),
        ("v1.38.0-beta.0", "v1.39", False),
        # ...but comes before the release of its own patch, and in semantic-versioning order among its kind.
        ("v1.38.0-beta.0", "v1.38.0", False),
        ("v1.38.0", "v1.38.0-beta.0", True),
        ("v1.38.0-beta.0", "v1.38.0-beta.0", True),
        ("v1.38.0-beta.0", "v1.38.0-alpha.2", True),
        ("v1.38.0-beta.0", "v1.38.0-rc.0", False),
        ("v1.38.0-beta.10", "v1.38.0-beta.2", True),
        ("v1.38.1-alpha.0", "v1.38.0", True),
    ],
)
def test_at_least_compares_numerically(version: str, minimum: str, expected: bool) -> None:
    assert versions.at_least(version, minimum) is expected


@pytest.mark.parametrize(
    ("version", "minor"),
    [("v1.36.3", "v1.36"), ("v1.38.0-beta.0", "v1.38"), ("1.38.0-rc.1", "v1.38"), ("v1.37", "v1.37")],
)
def test_the_minor_drops_the_patch_and_the_pre_release(version: str, minor: str) -> None:
    assert versions.minor_of(version) == minor


@pytest.mark.parametrize("bad", ["latest", "1", "v1.38.x", "v1.38.0-"])
def test_a_malformed_version_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(ValueError, match=f"{bad!r} is not a Kubernetes version"):
        versions.at_least(bad, "v1.37")


GOMOD_127 = (
    "module lws.local/devcluster/k8s\n\ngo 1.27.0\n\ntoolchain go1.27.3\n\n"
    "require k8s.io/kubernetes v1.38.0-beta.0\n"
)


@pytest.mark.parametrize(
    ("gomod", "local", "expected"),
    [
        # The local Go is new enough: no switch, so the keys of the versions it builds stay as they were.
        ("module m\n\ngo 1.26.0\n", "go1.26.8", None),
        (GOMOD_127, "go1.27.0", None),
        (GOMOD_127, "go1.28.1", None),
        # Too old, or a release candidate of the needed minor: the module's toolchain line.
        (GOMOD_127, "go1.26.8", "go1.27.3"),
        (GOMOD_127, "go1.27rc1", "go1.27.3"),
        ("module m\n", "go1.26.8", None),
    ],
)
def test_the_toolchain_comes_from_the_wrapper_go_line(gomod: str, local: str, expected: str | None) -> None:
    assert versions.go_toolchain_for(gomod, local) == expected


def test_a_wrapper_too_new_for_the_local_go_without_a_toolchain_line_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"needs Go >= 1\.27\.0 .* the local Go is go1\.26\.8 .* no toolchain line"
    ):
        versions.go_toolchain_for("module m\n\ngo 1.27.0\n", "go1.26.8")


def test_only_the_newest_wrappers_need_go_1_27() -> None:
    """The committed wrappers: 1.38 names go1.27.3 (Kubernetes 1.38's go.mod says go 1.27.0); the
    rest build with this repository's Go 1.26, so their cache keys are unchanged."""
    gomod = Path(versions.__file__).parent / "gomod" / "k8s"
    needs = {
        v: versions.go_toolchain_for((gomod / versions.minor_of(v) / "go.mod").read_text(), "go1.26.8")
        for v in WINDOW
    }
    assert needs == {v: None for v in WINDOW[:-1]} | {"v1.38.0-beta.0": "go1.27.3"}


def test_a_minor_without_node_binaries_has_a_control_plane_only_wrapper() -> None:
    gomod = Path(versions.__file__).parent / "gomod" / "k8s"
    without_nodes = {
        versions.minor_of(v)
        for v in WINDOW
        if "k8s.io/kubernetes/cmd/kubelet" not in (gomod / versions.minor_of(v) / "go.mod").read_text()
    }
    assert without_nodes == set(versions.NODES_UNAVAILABLE) == {"v1.38"}
