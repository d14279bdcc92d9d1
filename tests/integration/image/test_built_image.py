"""A built manager image (hack/build-image.sh's OCI layout) has the contract of hack/image-contract.toml:
its config (architecture, user, entrypoint, env, ports, labels) and its files, read from every layer
without unpacking: the entrypoint resolves through PATH to an executable under the prefix whose
interpreter exists for the config's architecture, the prefix is root's and read-only to the user, the
user owns nothing, bytecode is compiled so nothing needs to be written; and, unpacked, `lws --version`
runs as the image's user on a read-only root (under qemu-user-static for a foreign architecture).

Building takes minutes, so this skips, loudly, when no image is built. Build and check in one command:
    hack/build-image.sh --check                  # this machine's architecture, build/image
    hack/build-image.sh --arch arm64 --check     # build/image-arm64, run under emulation
Env: LWS_IMAGE_DIRS (space-separated OCI layout dirs; default build/image and build/image-arm64),
LWS_REQUIRE_IMAGES=1 (fail instead of skipping when one is absent).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from leaderworkerset import __version__
from tests.support import image
from tests.support.image import Contract, OciImage

DEFAULT_DIRS = (image.REPO / "build" / "image", image.REPO / "build" / "image-arm64")
QEMU = {"amd64": "qemu-x86_64", "arm64": "qemu-aarch64", "s390x": "qemu-s390x", "ppc64le": "qemu-ppc64le"}


def _image_dirs() -> list[Path]:
    named = os.environ.get("LWS_IMAGE_DIRS", "").split()
    return [Path(d).resolve() for d in named] if named else list(DEFAULT_DIRS)


@pytest.fixture(scope="module", params=_image_dirs(), ids=lambda d: d.name)
def layout(request: pytest.FixtureRequest) -> Path:
    out: Path = request.param
    if not (out / "oci" / "index.json").is_file():
        message = (
            f"NO IMAGE BUILT at {out}/oci: the image contract is unchecked. "
            "Build and check it with `hack/build-image.sh --check` (add `--arch arm64` for arm64)."
        )
        if os.environ.get("LWS_REQUIRE_IMAGES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return out / "oci"


@pytest.fixture(scope="module")
def built(layout: Path) -> OciImage:
    return image.read_image(layout)


@pytest.fixture(scope="module")
def contract() -> Contract:
    return image.contract()


def test_config(built: OciImage, contract: Contract) -> None:
    assert built.config["os"] == "linux"
    cfg = built.runtime
    assert cfg["User"] == contract.user
    assert cfg["WorkingDir"] == contract.workdir
    assert cfg["Entrypoint"] == contract.entrypoint
    assert not cfg.get("Cmd")
    assert sorted(cfg["ExposedPorts"]) == sorted(contract.exposed_ports)
    env = built.env()
    for key, value in contract.env.items():
        assert env.get(key) == value, key
    labels = cfg["Labels"]
    for key, value in contract.labels.items():
        assert labels.get(key) == value, key
    for key in contract.build_labels:
        assert labels.get(key), f"build label {key} is set"
    assert labels["org.opencontainers.image.version"] == __version__


def test_entrypoint_is_an_executable_of_the_configs_architecture(built: OciImage, contract: Contract) -> None:
    found = built.which(contract.entrypoint[0])
    assert found is not None, f"{contract.entrypoint[0]} is not on the image's PATH"
    assert found.startswith(contract.prefix + "/"), found
    entry = built.resolve(found)
    assert entry is not None
    assert entry.kind == "file"
    assert entry.mode & stat.S_IXOTH, f"{found} is {oct(entry.mode)}"
    assert entry.mode & stat.S_IROTH, f"{found} is {oct(entry.mode)}"
    interpreter = image.shebang(built.heads[entry.path])
    assert interpreter, f"{found} is a script with a #! line"
    target = built.resolve(interpreter[0])
    assert target is not None, f"{found}'s interpreter {interpreter[0]} is missing"
    assert target.kind == "file", target
    assert target.mode & stat.S_IXOTH
    assert image.elf_architecture(built.heads[target.path]) == built.architecture, (
        f"{interpreter[0]} ({target.path}) is built for the config's architecture {built.architecture}"
    )


def test_prefix_is_roots_and_read_only_to_the_user(built: OciImage, contract: Contract) -> None:
    uid, gid = (int(part) for part in contract.user.split(":"))
    under = {
        p: e for p, e in built.files.items() if p == contract.prefix or p.startswith(contract.prefix + "/")
    }
    assert built.files[contract.prefix].kind == "dir"
    assert len(under) > 1000, "the virtualenv is there"
    wrong_owner = sorted(p for p, e in under.items() if (e.uid, e.gid) != (0, 0))
    assert not wrong_owner, wrong_owner[:10]
    writable = sorted(
        p for p, e in under.items() if e.kind != "symlink" and e.mode & (stat.S_IWGRP | stat.S_IWOTH)
    )
    assert not writable, writable[:10]
    owned = sorted(p for p, e in built.files.items() if e.uid == uid or e.gid == gid)
    assert not owned, f"the user owns nothing in the image: {owned[:10]}"


def test_nothing_needs_writing(built: OciImage, contract: Contract) -> None:
    # World-writable places are sticky temporary directories only; the manager's writable paths are
    # directories the pod mounts over.
    loose = sorted(
        p
        for p, e in built.files.items()
        if e.kind != "symlink" and e.mode & stat.S_IWOTH and not (e.kind == "dir" and e.mode & stat.S_ISVTX)
    )
    assert not loose, loose[:10]
    for path in contract.writable:
        assert built.files[path].kind == "dir", f"{path} exists as a mount point"
    # Every importable module has its bytecode, at the plain level and at the level the image runs with
    # (PYTHONOPTIMIZE), so CPython never tries to write it on the read-only root, nor compiles it in memory
    # at every start (bin/activate_this.py is a script for shells, never imported).
    level = image.optimize_level()
    sources = [p for p in built.files if p.startswith(contract.prefix + "/lib/") and p.endswith(".py")]
    assert sources
    for optimize in sorted({0, level}):
        missing = [source for source in sources if _bytecode_of(source, optimize) not in built.files]
        assert not missing, (
            f"{len(missing)} of {len(sources)} modules lack level-{optimize} bytecode: {missing[:5]}"
        )
    # And the interpreter's own library, at the image's level (Debian compiles the plain one only).
    stdlib = next(
        p.removesuffix("/os.py")
        for p in built.files
        if re.fullmatch(r"/usr(/local)?/lib/python3\.11/os\.py", p)
    )
    modules = [
        p
        for p in built.files
        if p.startswith(stdlib + "/") and p.endswith(".py") and "/site-packages/" not in p
    ]
    missing = [source for source in modules if _bytecode_of(source, level) not in built.files]
    assert len(modules) > 100, stdlib
    assert not missing, (
        f"{len(missing)} of {len(modules)} modules of {stdlib} lack level-{level} bytecode: {missing[:5]}"
    )


def _bytecode_of(source: str, optimize: int) -> str:
    directory, _, name = source.rpartition("/")
    level = f".opt-{optimize}" if optimize else ""
    return f"{directory}/__pycache__/{name.removesuffix('.py')}.cpython-311{level}.pyc"


def _can_run(arch: str) -> str | None:
    """Why this machine cannot run the architecture's binaries, or None."""
    if os.geteuid() != 0:
        return "unpacking with owners and chroot need root"
    if shutil.which("unshare") is None:
        return "no unshare (util-linux)"
    host = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    if arch == host.replace("ppc64el", "ppc64le"):
        return None
    handler = Path("/proc/sys/fs/binfmt_misc") / QEMU[arch]
    if not handler.is_file() or "enabled" not in handler.read_text():
        return f"no binfmt_misc handler {handler} (apt-get install qemu-user-static binfmt-support)"
    return None


def test_version_runs_as_the_user_on_a_read_only_root(
    built: OciImage, layout: Path, contract: Contract, tmp_path: Path
) -> None:
    reason = _can_run(built.architecture)
    if reason:
        pytest.skip(f"cannot run a {built.architecture} image here: {reason}")
    root = tmp_path / "rootfs"
    root.mkdir()
    image.extract(layout, root)
    env = " ".join(f"'{k}={v}'" for k, v in built.env().items())
    # A private mount namespace: the root bound read-only onto itself, a tmpfs at each writable path,
    # then the entrypoint's program as the image's user, found through the image's PATH.
    mounts = " && ".join(
        [f'mount --bind "{root}" "{root}"', f'mount -o remount,bind,ro "{root}"']
        + [f'mount -t tmpfs tmpfs "{root}{p}"' for p in contract.writable]
    )
    chroot = f'chroot --userspec={contract.user} "{root}" /usr/bin/env -i {env}'
    entrypoint = " ".join(contract.entrypoint)
    script = (
        f"{mounts} && {chroot} {contract.entrypoint[0]} --version && {chroot} {entrypoint} --help >/dev/null"
    )
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-ec", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == f"lws {__version__}", probe.stdout
