"""The workload images' names and inputs (devcluster/realnodes/workloads.py): `--images` takes only
the images there are, their cache key follows what they are built from, and each runtime's lock pins
the version its image is named after, every package with its hashes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leaderworkerset.cli.cluster import app
from leaderworkerset.devcluster.realnodes import workloads

REPO = Path(__file__).resolve().parents[3]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+) \\$")


def test_names_are_read_once_each_and_an_unknown_one_is_refused_with_the_choices() -> None:
    assert workloads.parse_names(" ray, jax,ray ") == ("ray", "jax")
    assert workloads.parse_names("") == ()
    with pytest.raises(
        workloads.WorkloadImageError, match=r"--images: unknown workload image torch; known: ray, jax"
    ):
        workloads.parse_names("ray,torch")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--images", "torch", "--real-nodes", "1"], "unknown workload image torch; known: ray, jax"),
        (["--images", "ray"], "needs --real-nodes (fake nodes run no image)"),
    ],
)
def test_lws_cluster_up_refuses_images_it_cannot_give_before_building_anything(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LWS_CACHE_DIR", str(tmp_path))  # nothing may be built or started here
    result = CliRunner().invoke(app, ["up", *args])
    assert result.exit_code == 2
    words = " ".join(result.output.replace("│", " ").split())
    assert "--images" in words
    assert message in words
    assert list(tmp_path.iterdir()) == []


def test_the_cache_key_follows_the_runtimes_own_inputs(tmp_path: Path) -> None:
    for relative in ("hack/build-workload-image.sh", "hack/lib/debian-image.sh", "hack/workloads"):
        source, target = REPO / relative, tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    before = {r: workloads.inputs_digest(r, tmp_path) for r in workloads.WORKLOAD_IMAGES}
    assert before == {r: workloads.inputs_digest(r, REPO) for r in workloads.WORKLOAD_IMAGES}
    lock = tmp_path / "hack/workloads/jax/requirements.txt"
    lock.write_text(lock.read_text() + "\n")
    assert workloads.inputs_digest("jax", tmp_path) != before["jax"]
    assert workloads.inputs_digest("ray", tmp_path) == before["ray"]
    script = tmp_path / "hack/lib/debian-image.sh"
    script.write_text(script.read_text() + "\n")
    assert all(workloads.inputs_digest(r, tmp_path) != before[r] for r in before)


@pytest.mark.parametrize("runtime", sorted(workloads.WORKLOAD_IMAGES))
def test_each_lock_pins_the_version_its_image_is_named_after_with_hashes(runtime: str) -> None:
    lines = (REPO / "hack" / "workloads" / runtime / "requirements.txt").read_text().splitlines()
    pins = {m[1]: m[2] for line in lines if (m := PIN.match(line))}
    assert len(pins) == sum(1 for line in lines if "==" in line and not line.startswith("#")), lines
    for index, line in enumerate(lines):
        if PIN.match(line):
            assert lines[index + 1].strip().startswith("--hash=sha256:"), line
    tag = workloads.WORKLOAD_IMAGES[runtime].rsplit(":", 1)[1]
    assert pins[runtime] == tag or pins[runtime].startswith(tag + "."), (runtime, pins[runtime], tag)
    requested = (REPO / "hack" / "workloads" / runtime / "requirements.in").read_text()
    assert f"{runtime}=={pins[runtime]}" in requested
