"""Pinned versions of the local control plane and the cache key derived from them.

Every version that changes a built binary is part of the key, so a cache
directory is never reused for a different build.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

KUBERNETES_VERSION = "v1.37.2"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_BINARIES = (*KUBE_BINARIES, "etcd", "kwok")

# Bump when the build recipe itself changes (flags, stamped variables, layout of
# the output directory) so that older cached outputs are not trusted.
RECIPE_REVISION = "1"


def staging_version(kube_version: str = KUBERNETES_VERSION) -> str:
    """Staging modules (k8s.io/api, ...) are tagged v0.X.Y for Kubernetes v1.X.Y."""
    return "v0." + kube_version.removeprefix("v1.")


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


def build_key(go_version: str) -> str:
    return (
        f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"
        f"_{go_version}_{machine()}_r{RECIPE_REVISION}"
    )
