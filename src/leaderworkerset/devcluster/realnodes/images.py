"""Container images for the real nodes, made here without a registry or a Docker engine.

An image is an OCI image layout packed in a tar archive, the format `ctr images import` reads. The
small images (the pod sandbox `pause`, CoreDNS, the probe workload) are one uncompressed layer holding
one static Go binary; the manager's image comes from hack/build-image.sh (an umoci layout) and is only
renamed and packed. Archives are byte-for-byte reproducible (fixed timestamps and owners), so importing
the same image twice is a no-op for containerd.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
# containerd names an imported image after this annotation; the OCI one carries the tag alone.
CONTAINERD_NAME = "io.containerd.image.name"
OCI_REF_NAME = "org.opencontainers.image.ref.name"
NONROOT = "65532:65532"


@dataclass(frozen=True)
class ImageSpec:
    """A single-binary image: `binary` becomes /`name` (its entrypoint)."""

    ref: str  # e.g. lws.local/probe:v1
    binary: Path
    entrypoint: tuple[str, ...]
    user: str = NONROOT
    env: tuple[str, ...] = ()
    exposed_ports: tuple[str, ...] = ()
    # Empty directories the program expects (e.g. /tmp); the root filesystem may be read-only.
    directories: tuple[str, ...] = ("tmp", "etc")
    files: Mapping[str, bytes] = field(default_factory=dict)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _tar_add(archive: tarfile.TarFile, name: str, data: bytes | None, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if data is None:
        info.type = tarfile.DIRTYPE
        info.mode = mode
        archive.addfile(info)
    else:
        info.size = len(data)
        info.mode = mode
        archive.addfile(info, io.BytesIO(data))


def layer_of(spec: ImageSpec) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory in spec.directories:
            _tar_add(archive, directory, None, 0o1777 if directory == "tmp" else 0o755)
        for path, content in sorted(spec.files.items()):
            _tar_add(archive, path, content, 0o644)
        _tar_add(archive, spec.entrypoint[0].lstrip("/"), spec.binary.read_bytes(), 0o755)
    return buffer.getvalue()


def config_of(spec: ImageSpec, layer_digest: str, architecture: str = "amd64") -> dict[str, Any]:
    return {
        "architecture": architecture,
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "User": spec.user,
            "Entrypoint": list(spec.entrypoint),
            "Env": ["PATH=/", *spec.env],
            "WorkingDir": "/",
            **({"ExposedPorts": {p: {} for p in spec.exposed_ports}} if spec.exposed_ports else {}),
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def pack(ref: str, blobs: Sequence[bytes], manifest: bytes, out: Path) -> Path:
    """Write an OCI layout archive holding `manifest` and its `blobs` under the name `ref`."""
    tag = ref.rsplit(":", 1)[-1] if ":" in ref.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [
            {
                "mediaType": MANIFEST_MEDIA_TYPE,
                "digest": _digest(manifest),
                "size": len(manifest),
                "annotations": {CONTAINERD_NAME: ref, OCI_REF_NAME: tag},
            }
        ],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _tar_add(archive, "oci-layout", _canonical({"imageLayoutVersion": "1.0.0"}), 0o644)
        _tar_add(archive, "blobs", None, 0o755)
        _tar_add(archive, "blobs/sha256", None, 0o755)
        for blob in {_digest(b): b for b in [*blobs, manifest]}.items():
            _tar_add(archive, f"blobs/sha256/{blob[0].removeprefix('sha256:')}", blob[1], 0o644)
        _tar_add(archive, "index.json", _canonical(index), 0o644)
    return out


def build_archive(spec: ImageSpec, out: Path) -> Path:
    """The OCI archive of a single-binary image."""
    layer = layer_of(spec)
    config = _canonical(config_of(spec, _digest(layer)))
    manifest = _canonical(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": _digest(config), "size": len(config)},
            "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": _digest(layer), "size": len(layer)}],
        }
    )
    return pack(spec.ref, [layer, config], manifest, out)


def archive_layout(layout: Path, ref: str, out: Path) -> Path:
    """Pack an existing OCI image layout (hack/build-image.sh's umoci output) under the name `ref`.

    The layout's index may name its image by tag only; the archive names it in full so containerd
    stores it as `ref`."""
    index = json.loads((layout / "index.json").read_text())
    if len(index.get("manifests") or []) != 1:
        raise ValueError(
            f"{layout}/index.json: expected one image, found {len(index.get('manifests') or [])}"
        )
    descriptor = index["manifests"][0]
    manifest = (layout / "blobs" / "sha256" / descriptor["digest"].removeprefix("sha256:")).read_bytes()
    parsed = json.loads(manifest)
    blobs = [
        (layout / "blobs" / "sha256" / d["digest"].removeprefix("sha256:")).read_bytes()
        for d in [parsed["config"], *parsed["layers"]]
    ]
    return pack(ref, blobs, manifest, out)
