"""The manager image's contract (hack/image-contract.toml) and the two things checked against it: the
Dockerfile, parsed as text, and an OCI image layout as hack/build-image.sh writes it (its config and the
files of its layers, read without unpacking)."""

from __future__ import annotations

import gzip
import json
import shlex
import shutil
import stat
import tarfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CONTRACT_FILE = REPO / "hack" / "image-contract.toml"
DOCKERFILE = REPO / "Dockerfile"
IMAGE_REF = "lws"  # the tag hack/build-image.sh gives the image in its layout (OUT/oci:lws)

# e_machine of an ELF header → the OCI/Go architecture name.
ELF_MACHINES = {62: "amd64", 183: "arm64", 22: "s390x", 21: "ppc64le"}


@dataclass(frozen=True)
class Contract:
    user: str
    workdir: str
    entrypoint: list[str]
    exposed_ports: list[str]
    prefix: str
    writable: list[str]
    env: dict[str, str]
    labels: dict[str, str]
    build_labels: dict[str, str]


def contract() -> Contract:
    data = tomllib.loads(CONTRACT_FILE.read_text(encoding="utf-8"))
    return Contract(**data)


def optimize_level() -> int:
    """The image's PYTHONOPTIMIZE: 2 drops docstrings and asserts from every module it imports."""
    return int(contract().env.get("PYTHONOPTIMIZE", "0"))


def python_flags(level: int | None = None) -> list[str]:
    """The interpreter flags for an optimisation level, by default the image's (PYTHONOPTIMIZE=N is -O
    given N times)."""
    level = optimize_level() if level is None else level
    return ["-" + "O" * level] if level else []


# ---- the Dockerfile ------------------------------------------------------------------------------


@dataclass
class Stage:
    """One FROM stage, with the instructions the contract is about."""

    base: str
    name: str | None
    args: dict[str, str | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    workdir: str | None = None
    exposed: list[str] = field(default_factory=list)
    entrypoint: Any = None
    cmd: Any = None
    copies: list[list[str]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)


def instructions(text: str) -> Iterator[tuple[str, str]]:
    """(KEYWORD, rest) per instruction: comments dropped, backslash continuations joined."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        keyword, _, rest = whole.partition(" ")
        yield keyword.upper(), rest.strip()
    if pending:
        raise ValueError(f"the Dockerfile ends inside a continued instruction: {pending!r}")


def _pairs(rest: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for token in shlex.split(rest):
        key, sep, value = token.partition("=")
        if not sep:
            raise ValueError(f"use the key=value form: {rest!r}")
        pairs[key] = value
    return pairs


@dataclass(frozen=True)
class Dockerfile:
    global_args: dict[str, str | None]  # ARGs before the first FROM: what FROM lines may use
    stages: list[Stage]

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


def parse_dockerfile(text: str) -> Dockerfile:
    stages: list[Stage] = []
    global_args: dict[str, str | None] = {}
    for keyword, rest in instructions(text):
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
            continue
        if keyword == "ARG":
            key, sep, value = rest.partition("=")
            (stages[-1].args if stages else global_args)[key] = value if sep else None
            continue
        if not stages:
            raise ValueError(f"{keyword} before the first FROM")
        stage = stages[-1]
        if keyword == "ENV":
            stage.env.update(_pairs(rest))
        elif keyword == "LABEL":
            stage.labels.update(_pairs(rest))
        elif keyword == "USER":
            stage.user = rest
        elif keyword == "WORKDIR":
            stage.workdir = rest
        elif keyword == "EXPOSE":
            stage.exposed += [p if "/" in p else f"{p}/tcp" for p in rest.split()]
        elif keyword == "ENTRYPOINT":
            stage.entrypoint = json.loads(rest) if rest.startswith("[") else rest
        elif keyword == "CMD":
            stage.cmd = json.loads(rest) if rest.startswith("[") else rest
        elif keyword == "COPY":
            stage.copies.append(rest.split())
        elif keyword == "RUN":
            stage.runs.append(rest)
    if not stages:
        raise ValueError("no FROM in the Dockerfile")
    return Dockerfile(global_args, stages)


# ---- an OCI image layout -------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    path: str  # absolute, normalised ("/opt/lws/bin/lws")
    kind: str  # "file", "dir", "symlink", "hardlink", "other"
    mode: int  # permission bits, incl. setuid/setgid/sticky
    uid: int
    gid: int
    linkname: str = ""


@dataclass
class OciImage:
    config: dict[str, Any]
    files: dict[str, Entry]
    heads: dict[str, bytes]  # the first bytes of every regular file (ELF header or shebang line)

    @property
    def architecture(self) -> str:
        return str(self.config["architecture"])

    @property
    def runtime(self) -> dict[str, Any]:
        cfg: dict[str, Any] = self.config.get("config") or {}
        return cfg

    def env(self) -> dict[str, str]:
        return dict(item.split("=", 1) for item in self.runtime.get("Env") or [])

    def resolve(self, path: str, hops: int = 0) -> Entry | None:
        """The entry at path, following symbolic links (every component), inside the image."""
        if hops > 40:
            raise ValueError(f"symlink loop at {path}")
        parts = PurePosixPath(path).parts[1:]
        current = PurePosixPath("/")
        for i, part in enumerate(parts):
            current = current / part
            entry = self.files.get(str(current))
            if entry is None:
                return None
            if entry.kind == "hardlink":
                entry = self.files.get(_normal("/" + entry.linkname))
                if entry is None:
                    return None
            if entry.kind == "symlink":
                target = PurePosixPath(entry.linkname)
                base = target if target.is_absolute() else current.parent / target
                rest = PurePosixPath(*parts[i + 1 :]) if i + 1 < len(parts) else None
                return self.resolve(_normal(str(base / rest) if rest else str(base)), hops + 1)
        return self.files.get(str(current)) if parts else self.files.get("/")

    def which(self, name: str) -> str | None:
        """The path a runtime finds for a bare command name through the image's PATH."""
        for directory in self.env().get("PATH", "").split(":"):
            candidate = f"{directory.rstrip('/')}/{name}"
            entry = self.resolve(candidate)
            if entry is not None and entry.kind == "file":
                return candidate
        return None


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in PurePosixPath(path).parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def _blob(layout: Path, digest: str) -> Path:
    algorithm, _, value = digest.partition(":")
    return layout / "blobs" / algorithm / value


def manifest(layout: Path, ref: str = IMAGE_REF) -> dict[str, Any]:
    index = json.loads((layout / "index.json").read_text())
    for desc in index["manifests"]:
        if desc.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref:
            found: dict[str, Any] = json.loads(_blob(layout, desc["digest"]).read_text())
            return found
    raise LookupError(f"no image tagged {ref!r} in {layout}/index.json")


def layer_members(
    layout: Path, ref: str = IMAGE_REF
) -> Iterator[tuple[str, tarfile.TarFile, tarfile.TarInfo]]:
    """(digest, tar, member) for every member of every layer, in order."""
    for layer in manifest(layout, ref)["layers"]:
        media = layer["mediaType"]
        if not media.endswith(("tar+gzip", "tar")):
            raise ValueError(f"layer media type {media} is not read here")
        opener = gzip.open if media.endswith("+gzip") else open
        with opener(_blob(layout, layer["digest"]), "rb") as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for member in tar:
                yield layer["digest"], tar, member


def read_image(layout: Path, ref: str = IMAGE_REF, head_bytes: int = 128) -> OciImage:
    """The image's config and its merged file listing (OCI whiteouts applied), without unpacking it."""
    config = json.loads(_blob(layout, manifest(layout, ref)["config"]["digest"]).read_text())
    files: dict[str, Entry] = {}
    heads: dict[str, bytes] = {}
    for _, tar, member in layer_members(layout, ref):
        path = _normal("/" + member.name)
        name = PurePosixPath(path).name
        if name == ".wh..wh..opq":
            parent = str(PurePosixPath(path).parent)
            for old in [p for p in files if p.startswith(parent.rstrip("/") + "/")]:
                files.pop(old)
                heads.pop(old, None)
            continue
        if name.startswith(".wh."):
            gone = str(PurePosixPath(path).parent / name[4:])
            for old in [p for p in files if p == gone or p.startswith(gone + "/")]:
                files.pop(old)
                heads.pop(old, None)
            continue
        kind = (
            "file"
            if member.isreg()
            else "dir"
            if member.isdir()
            else "symlink"
            if member.issym()
            else "hardlink"
            if member.islnk()
            else "other"
        )
        files[path] = Entry(path, kind, stat.S_IMODE(member.mode), member.uid, member.gid, member.linkname)
        if member.isreg():
            handle = tar.extractfile(member)
            if handle is not None:
                heads[path] = handle.read(head_bytes)
    files.setdefault("/", Entry("/", "dir", 0o755, 0, 0))
    return OciImage(config=config, files=files, heads=heads)


def elf_architecture(head: bytes) -> str | None:
    """The architecture of an ELF file from its header (little-endian e_machine at offset 18)."""
    if not head.startswith(b"\x7fELF") or len(head) < 20:
        return None
    big_endian = head[5] == 2
    machine = int.from_bytes(head[18:20], "big" if big_endian else "little")
    return ELF_MACHINES.get(machine, f"e_machine={machine}")


def shebang(head: bytes) -> list[str]:
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode().split()


def extract(layout: Path, dest: Path, ref: str = IMAGE_REF) -> None:
    """Unpack every layer into dest (as root: owners kept), applying whiteouts."""
    for _, tar, member in layer_members(layout, ref):
        path = _normal("/" + member.name)
        name = PurePosixPath(path).name
        target = dest / path.lstrip("/")
        if name == ".wh..wh..opq":
            for child in target.parent.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            continue
        if name.startswith(".wh."):
            gone = target.parent / name[4:]
            if gone.is_dir() and not gone.is_symlink():
                shutil.rmtree(gone)
            elif gone.exists() or gone.is_symlink():
                gone.unlink()
            continue
        tar.extract(member, dest, numeric_owner=True, filter="fully_trusted")
