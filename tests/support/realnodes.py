"""Support for the tests on real nodes (docs/real-nodes.md): the manager image, the chart installed
as a user installs it, and the probe workload's HTTP endpoints (reached at pod addresses, which the
host routes to the nodes)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset import __version__
from leaderworkerset.devcluster import tools, versions
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.realnodes import images

REPO = Path(__file__).resolve().parents[2]
MANAGER_REPOSITORY = "lws.local/lws-python"
MANAGER_TAG = f"v{__version__}"
MANAGER_IMAGE = f"{MANAGER_REPOSITORY}:{MANAGER_TAG}"
RELEASE = "lws"
NAMESPACE = "lws-system"
# What the image is built from: a change to any of these builds a new one.
_IMAGE_INPUTS = ("src", "pyproject.toml", "uv.lock", "hack/build-image.sh", "hack/image-contract.toml")


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("REAL NODES NEED ROOT: network namespaces, mounts and cgroups (docs/real-nodes.md)")


def _source_digest() -> str:
    digest = hashlib.sha256()
    for top in _IMAGE_INPUTS:
        root = REPO / top
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(REPO)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def manager_image_archive() -> Path:
    """The manager's image as hack/build-image.sh builds it (once per source tree, cached), packed for
    `ctr images import` under MANAGER_IMAGE."""
    cache = versions.cache_root() / "images" / f"lws-{_source_digest()}"
    archive = cache / "lws.tar"
    if archive.is_file():
        return archive
    cache.mkdir(parents=True, exist_ok=True)
    build = subprocess.run(
        [str(REPO / "hack" / "build-image.sh"), str(cache / "image")],
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode != 0:
        raise RuntimeError(f"hack/build-image.sh failed:\n{build.stdout[-2000:]}\n{build.stderr[-2000:]}")
    images.archive_layout(cache / "image" / "oci", MANAGER_IMAGE, archive)
    return archive


def helm(cluster: LocalCluster, *args: str) -> str:
    proc = subprocess.run(
        [str(tools.ensure_tool(tools.HELM)), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def helm_install(cluster: LocalCluster, *sets: str) -> None:
    """`helm install` of charts/lws with the built image, as docs/install.md tells a user."""
    values = [
        f"image.manager.repository={MANAGER_REPOSITORY}",
        f"image.manager.tag={MANAGER_TAG}",
        "enableDisaggregatedSet=true",
        # Two replicas on two small nodes beside the probe workload.
        "resources.requests.cpu=100m",
        "resources.requests.memory=128Mi",
        *sets,
    ]
    helm(
        cluster,
        "install",
        RELEASE,
        str(REPO / "charts" / "lws"),
        f"--namespace={NAMESPACE}",
        "--create-namespace",
        *(f"--set={v}" for v in values),
    )


def pod_http(ip: str, path: str, method: str = "GET") -> Any:
    """One request to a probe pod's HTTP port; the decoded JSON answer, or the text."""
    request = urllib.request.Request(
        f"http://{ip}:8080{path}", method=method, data=b"" if method == "POST" else None
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        body = answer.read().decode()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return body
