"""The image builds start by detaching what a killed build left mounted in its work tree
(hack/lib/mounts.sh): a rerun must neither fail on a read-only sysfs nor remove files through a bind
mount. Needs root (it mounts)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import image

MOUNTS_SH = image.REPO / "hack" / "lib" / "mounts.sh"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


def _mounted_under(path: Path) -> list[str]:
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p == str(path) or p.startswith(f"{path}/")]


def test_a_killed_builds_mounts_are_detached_and_their_sources_kept(tmp_path: Path) -> None:
    host = tmp_path / "host-dev"
    host.mkdir()
    (host / "null-stand-in").write_text("a host file seen through the bind mount")
    rootfs = tmp_path / "out" / "work" / "rootfs"
    for sub in ("dev", "proc", "sys"):
        (rootfs / sub).mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(host), str(rootfs / "dev")], check=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    subprocess.run(["mount", "-t", "sysfs", "-o", "ro", "sys", str(rootfs / "sys")], check=True)
    try:
        assert len(_mounted_under(tmp_path / "out")) == 3
        subprocess.run(
            [
                "bash",
                "-c",
                f'source "{MOUNTS_SH}" && detach_mounts_under "$1" && rm -rf "$1"',
                "_",
                f"{tmp_path}/out",
            ],
            check=True,
        )
        assert _mounted_under(tmp_path / "out") == []
        assert not (tmp_path / "out").exists()
        assert (host / "null-stand-in").exists()
    finally:
        for point in sorted(_mounted_under(tmp_path / "out"), reverse=True):
            subprocess.run(["umount", "-l", point], check=False)
