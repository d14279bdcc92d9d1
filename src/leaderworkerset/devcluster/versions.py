"""Pinned versions of the local control plane and the cache key derived from them.

Every version that changes a built binary is part of the key, so a cache
directory is never reused for a different build.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

# The supported window, as upstream states it ("1.34 or newer", CI on 1.34-1.37), plus the newest
# minor the Go module proxy serves (1.38, a beta): the newest patch of each minor the proxy serves.
# Each has its wrapper module in gomod/k8s/<minor>.
SUPPORTED_KUBERNETES_VERSIONS = ("v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2", "v1.38.0-beta.0")
NEWEST_SUPPORTED_VERSION = SUPPORTED_KUBERNETES_VERSIONS[-1]
# The default for every cluster a process starts (CLI, `make test`, CI): the newest release, not the
# newest supported version, so that a pre-release never becomes what CI runs on by accident.
KUBERNETES_VERSION = "v1.37.2"
# Minors whose node binaries (kubelet, kube-proxy) cannot be built here, and why; their wrapper
# module lists only the control plane (hack/gen-k8s-wrapper.sh --control-plane-only).
NODES_UNAVAILABLE = {
    "v1.38": (
        "kubelet and kube-proxy v1.38 import sigs.k8s.io/iptables-wrappers v1.0.0, whose source the Go "
        "module proxy does not serve (403 Forbidden for its .zip)"
    ),
}
# Chooses the version for every cluster a process starts (CLI, test suite, benchmarks) unless a
# caller names one: `LWS_KUBERNETES_VERSION=1.34 make test` runs the suite on 1.34.
KUBERNETES_VERSION_ENV = "LWS_KUBERNETES_VERSION"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_BINARIES = (*KUBE_BINARIES, "etcd", "kwok")

# Bump when the build recipe itself changes (flags, stamped variables, layout of
# the output directory) so that older cached outputs are not trusted.
RECIPE_REVISION = "1"


class UnsupportedVersionError(ValueError):
    """A Kubernetes version outside the supported window."""


def resolve_kubernetes_version(requested: str | None = None) -> str:
    """The full version (v1.X.Y) for `requested` ("1.36", "v1.36", "1.36.3" or "v1.36.3"); None
    reads LWS_KUBERNETES_VERSION, then falls back to the default (KUBERNETES_VERSION)."""
    if requested is None:
        requested = os.environ.get(KUBERNETES_VERSION_ENV) or KUBERNETES_VERSION
    wanted = "v" + requested.strip().removeprefix("v")
    for version in SUPPORTED_KUBERNETES_VERSIONS:
        if wanted in (version, minor_of(version)):
            return version
    window = ", ".join(minor_of(v).removeprefix("v") for v in SUPPORTED_KUBERNETES_VERSIONS)
    raise UnsupportedVersionError(
        f"Kubernetes version {requested!r} is not supported by the local cluster: choose one of {window} "
        f"(built at {', '.join(SUPPORTED_KUBERNETES_VERSIONS)})"
    )


_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?")


def _parse(version: str) -> tuple[tuple[int, ...], str | None]:
    """v1.38.0-beta.0 -> ((1, 38, 0), "beta.0"); v1.37 -> ((1, 37), None)."""
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        raise ValueError(f"{version!r} is not a Kubernetes version (v1.X, v1.X.Y or v1.X.Y-pre.N)")
    major, minor, patch, pre = match.groups()
    numbers = (int(major), int(minor)) + ((int(patch),) if patch is not None else ())
    return numbers, pre


def _prerelease_key(pre: str) -> tuple[tuple[int, int | str], ...]:
    # Semantic-versioning order: identifiers left to right, numbers below words (alpha.2 < beta.0 < rc.0).
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))


def at_least(kube_version: str, minimum: str) -> bool:
    """Whether `kube_version` (v1.X, v1.X.Y or v1.X.Y-pre.N) is at or above `minimum`, numerically.

    A minimum of v1.X is met by every v1.X version, its pre-releases included (their features and
    gates are those of v1.X); a minimum of v1.X.Y is not met by v1.X.Y's own pre-releases."""
    have, have_pre = _parse(kube_version)
    need, need_pre = _parse(minimum)
    if have[: len(need)] != need or len(need) == 2:
        return have[: len(need)] >= need
    if have_pre is None:
        return True
    return need_pre is not None and _prerelease_key(have_pre) >= _prerelease_key(need_pre)


def minor_of(kube_version: str) -> str:
    """v1.36.3 -> v1.36; v1.38.0-beta.0 -> v1.38"""
    numbers, _ = _parse(kube_version)
    return f"v{numbers[0]}.{numbers[1]}"


def go_toolchain_for(wrapper_gomod: str, local_go: str) -> str | None:
    """The Go toolchain a wrapper module needs when the local Go is too old for it, else None.

    `wrapper_gomod` is the module's go.mod text: its `go` line is the oldest Go that builds it (taken
    from Kubernetes' own go.mod), and its `toolchain` line names the toolchain to use instead when
    the local one (`local_go`, e.g. go1.26.8) is older."""
    required = re.search(r"^go\s+(\S+)\s*$", wrapper_gomod, re.MULTILINE)
    if required is None or _go_release(local_go) >= _go_release(required.group(1)):
        return None
    named = re.search(r"^toolchain\s+(go\S+)\s*$", wrapper_gomod, re.MULTILINE)
    if named is None:
        raise ValueError(
            f"the wrapper module needs Go >= {required.group(1)} (its go line) but the local Go is "
            f"{local_go} and the module names no toolchain line to use instead"
        )
    return named.group(1)


def _go_release(version: str) -> tuple[int, ...]:
    """go1.26.8 / 1.27.0 / go1.27rc1 -> (1, 26, 8) / (1, 27, 0) / (1, 27, -1): a release candidate is
    below its release."""
    match = re.fullmatch(r"(?:go)?(\d+)\.(\d+)(?:\.(\d+))?((?:rc|beta)\d+)?(?:\s.*)?", version.strip())
    if match is None:
        raise ValueError(f"{version!r} is not a Go version (go1.X.Y)")
    major, minor, patch, pre = match.groups()
    return (int(major), int(minor), -1 if pre else int(patch or 0))


def machine() -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}-{arch}"


def cache_root() -> Path:
    """Where built binaries and named clusters live; outside the repository on purpose."""
    explicit = os.environ.get("LWS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "leaderworkerset"


def build_key(go_version: str, kube_version: str = KUBERNETES_VERSION) -> str:
    return (
        f"k8s-{kube_version}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"
        f"_{go_version}_{machine()}_r{RECIPE_REVISION}"
    )


def kubernetes_version_of(bindir: Path) -> str:
    """The Kubernetes version a build directory holds, read back from its key (k8s-v1.X.Y_...)."""
    head = bindir.name.split("_", 1)[0]
    if not head.startswith("k8s-v1."):
        raise ValueError(f"{bindir} is not a build directory of the local control plane")
    return head.removeprefix("k8s-")
