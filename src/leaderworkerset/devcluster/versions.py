"""Pinned versions of the local control plane and the cache key derived from them.

Every version that changes a built binary is part of the key, so a cache
directory is never reused for a different build.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

# The supported window, as upstream states it ("1.34 or newer", CI on 1.34-1.37): the newest patch
# of each minor that the Go module proxy serves. Each has its wrapper module in gomod/k8s/<minor>.
SUPPORTED_KUBERNETES_VERSIONS = ("v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2")
KUBERNETES_VERSION = SUPPORTED_KUBERNETES_VERSIONS[-1]  # the default: the newest
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
    reads LWS_KUBERNETES_VERSION, then falls back to the newest."""
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


def at_least(kube_version: str, minimum: str) -> bool:
    """Whether v1.X.Y (or v1.X) is at or above `minimum` (v1.X or v1.X.Y), numerically."""

    def parts(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in version.removeprefix("v").split("."))

    return parts(kube_version)[: len(parts(minimum))] >= parts(minimum)


def minor_of(kube_version: str) -> str:
    """v1.36.3 -> v1.36"""
    return kube_version.rsplit(".", 1)[0]


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
