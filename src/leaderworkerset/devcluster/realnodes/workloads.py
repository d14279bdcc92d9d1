"""The workload runtimes' images for real nodes (docs/examples/, docs/real-nodes.md): Ray and JAX on
Debian trixie's CPython, built by hack/build-workload-image.sh from a source checkout (Docker-free),
cached under the cache root keyed on everything they are built from, packed for `ctr images import`.

The image names are a contract: the examples and other manifests use them as they are.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Final

from filelock import FileLock

from leaderworkerset.devcluster import versions
from leaderworkerset.devcluster.progress import run_step
from leaderworkerset.devcluster.realnodes import images

WORKLOAD_IMAGES: Final = {"ray": "lws.local/ray:2.60.0", "jax": "lws.local/jax:0.12.0"}
REPO_ROOT: Final = Path(__file__).resolve().parents[4]
BUILD_SCRIPT: Final = "hack/build-workload-image.sh"
# What an image is built from besides its runtime's locked requirements: a change builds a new one.
_SHARED_INPUTS: Final = (BUILD_SCRIPT, "hack/lib/debian-image.sh")


class WorkloadImageError(RuntimeError):
    """A workload image cannot be named or built."""


def parse_names(value: str) -> tuple[str, ...]:
    """`ray,jax` -> ("ray", "jax"); an unknown name is refused, naming the ones there are."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in WORKLOAD_IMAGES]
    if unknown:
        raise WorkloadImageError(
            f"--images: unknown workload image {', '.join(unknown)}; known: {', '.join(WORKLOAD_IMAGES)}"
        )
    return names


def inputs_digest(runtime: str, repo: Path = REPO_ROOT) -> str:
    digest = hashlib.sha256()
    for relative in (*_SHARED_INPUTS, f"hack/workloads/{runtime}/requirements.txt"):
        digest.update(relative.encode() + b"\0" + (repo / relative).read_bytes())
    return digest.hexdigest()[:16]


def archive_path(runtime: str, repo: Path = REPO_ROOT) -> Path:
    return versions.cache_root() / "images" / f"{runtime}-{inputs_digest(runtime, repo)}" / f"{runtime}.tar"


def ensure_archive(runtime: str, repo: Path = REPO_ROOT) -> Path:
    """The runtime's image as an OCI archive named WORKLOAD_IMAGES[runtime]: built once per set of inputs
    (a few minutes cold; root, like real nodes), then taken from the cache."""
    if runtime not in WORKLOAD_IMAGES:
        raise WorkloadImageError(f"no workload image {runtime!r}; known: {', '.join(WORKLOAD_IMAGES)}")
    if not (repo / BUILD_SCRIPT).is_file():
        raise WorkloadImageError(f"workload images are built from a source checkout ({repo / BUILD_SCRIPT})")
    archive = archive_path(runtime, repo)
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(archive.parent / "build.lock")):
        if not archive.is_file():
            _build(runtime, repo, archive)
    return archive


def _build(runtime: str, repo: Path, archive: Path) -> None:
    layout = archive.parent / "image"
    run_step(
        f"Building the workload image {WORKLOAD_IMAGES[runtime]} ({BUILD_SCRIPT})",
        [str(repo / BUILD_SCRIPT), runtime, str(layout)],
        cwd=repo,
        env=dict(os.environ),
        log=archive.parent / "build.log",
        started=time.monotonic(),
    )
    partial = archive.with_suffix(".tmp")
    images.archive_layout(layout / "oci", WORKLOAD_IMAGES[runtime], partial)
    partial.rename(archive)  # whole or absent: a crash never leaves a truncated archive to be trusted
    shutil.rmtree(layout)  # the archive holds every blob
