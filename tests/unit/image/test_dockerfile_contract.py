"""The Dockerfile, read as text, builds the image contract of hack/image-contract.toml (the same contract
hack/build-image.sh builds and tests/integration/image checks on a built image); and the Deployment that
`lws install` and the chart apply matches it: its user, a read-only root, an emptyDir at every path
the manager writes."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest
import yaml

from leaderworkerset import __version__
from leaderworkerset.api import constants as c
from leaderworkerset.install.manifests import InstallOptions, deployment
from tests.support import image
from tests.support.image import Contract, Dockerfile, Stage

CHART_VALUES = image.REPO / "charts" / "lws" / "values.yaml"


@pytest.fixture(scope="module")
def contract() -> Contract:
    return image.contract()


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return image.parse_dockerfile(image.DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def final(dockerfile: Dockerfile) -> Stage:
    return dockerfile.final


def test_user_workdir_entrypoint_ports(contract: Contract, final: Stage) -> None:
    assert final.user == contract.user
    assert final.workdir == contract.workdir
    assert final.entrypoint == contract.entrypoint, "exec form, so the Deployment's args are appended"
    assert final.cmd is None, "a CMD would be replaced by the Deployment's args anyway"
    assert sorted(final.exposed) == sorted(contract.exposed_ports)


def test_env(contract: Contract, final: Stage) -> None:
    for key, value in contract.env.items():
        assert final.env.get(key) == value, key
    assert "$" not in final.env["PATH"], "PATH is spelled out, not inherited from the base image"


def test_labels(contract: Contract, final: Stage) -> None:
    for key, value in contract.labels.items():
        assert final.labels.get(key) == value, key
    for key in contract.build_labels:
        value = final.labels.get(key, "")
        arg = re.fullmatch(r"\$\{(\w+)\}", value)
        assert arg, f"{key} is set per build from an ARG, not {value!r}"
        assert arg.group(1) in final.args, f"{key}: ARG {arg.group(1)} is declared in the final stage"
    assert final.args["VERSION"] == __version__, "the default VERSION build arg is the package version"


def test_the_runtime_stage_adds_only_the_prefix(contract: Contract, dockerfile: Dockerfile) -> None:
    final = dockerfile.final
    assert final.runs == [], "the runtime stage runs nothing: its files are the base image's and the prefix"
    assert final.copies == [["--from=build", contract.prefix, contract.prefix]], (
        "one COPY, without --chown/--chmod: the prefix stays root-owned and read-only to the user"
    )
    build = dockerfile.stage("build")
    assert build.env["UV_PROJECT_ENVIRONMENT"] == contract.prefix
    assert build.env["UV_COMPILE_BYTECODE"] == "1", "bytecode compiled at build time: nothing to write"
    level = image.optimize_level()
    compiles = [run for run in build.runs if f"-m compileall -q -o {level} {contract.prefix}/lib" in run]
    assert level == 0 or compiles, (
        f"the build compiles the bytecode of the image's PYTHONOPTIMIZE={level} too"
    )
    assert final.base == build.base, "the virtualenv runs on the interpreter it was built with"


def test_the_manager_writes_only_under_writable_paths(contract: Contract) -> None:
    writable = [PurePosixPath(p) for p in contract.writable]
    cert_dir = PurePosixPath(c.DEFAULT_WEBHOOK_CERT_DIR)
    assert any(cert_dir.is_relative_to(w) for w in writable), cert_dir
    # The metrics server's self-signed pair goes to tempfile's directory, /tmp when the environment names
    # none (tempfile reads TMPDIR, TEMP, TMP).
    assert not {"TMPDIR", "TEMP", "TMP"} & set(contract.env)
    assert PurePosixPath("/tmp") in writable


def test_lws_install_deployment_fits_the_image(contract: Contract) -> None:
    pod = deployment(InstallOptions())["spec"]["template"]["spec"]
    uid, gid = (int(part) for part in contract.user.split(":"))
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid)
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert "command" not in container, "the image's entrypoint runs; the Deployment passes flags only"
    ports = sorted(f"{p['containerPort']}/{p['protocol'].lower()}" for p in container["ports"])
    assert ports == sorted(contract.exposed_ports)
    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    for path in contract.writable:
        assert mounted.get(path) in empty_dirs, f"{path} is an emptyDir mount"


def test_chart_values_fit_the_image(contract: Contract) -> None:
    # tests/integration/install/test_chart.py checks that the chart's pod spec (volumes, mounts, security
    # context) equals what `lws install` applies; here, the values that set them.
    values = yaml.safe_load(CHART_VALUES.read_text(encoding="utf-8"))
    uid, gid = (int(part) for part in contract.user.split(":"))
    assert values["podSecurityContext"]["runAsUser"] == uid
    assert values["podSecurityContext"]["runAsGroup"] == gid
    assert values["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            'FROM a AS b\nENV X=1 \\\n  # note\n  Y="two words"\n',
            {"X": "1", "Y": "two words"},
            id="continued",
        ),
        pytest.param("FROM a\nENV PATH=/x:$PATH\n", {"PATH": "/x:$PATH"}, id="unexpanded"),
    ],
)
def test_env_parsing(text: str, expected: dict[str, str]) -> None:
    assert image.parse_dockerfile(text).final.env == expected


def test_parsing_rejects_the_legacy_env_form() -> None:
    with pytest.raises(ValueError, match="key=value"):
        image.parse_dockerfile("FROM a\nENV X 1\n")
