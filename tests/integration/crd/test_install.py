"""`lws install` on a real API server, then what kubectl users see (get columns, short names, explain)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from lightkube import AsyncClient
from typer.testing import CliRunner

from leaderworkerset.api import constants as c
from leaderworkerset.cli.crds import crds_command
from leaderworkerset.cli.install import install_command
from leaderworkerset.crd.install import CRD_ESTABLISHED
from leaderworkerset.crd.packaged import crd_texts
from leaderworkerset.devcluster.cluster import LocalCluster
from tests.integration.crd.objects import DS, DSRS, LWS, kubectl, upstream_documents
from tests.support import upstream
from tests.support.wait import eventually

pytestmark = pytest.mark.cluster

CRD_NAMES = [
    f"{c.LWS_PLURAL}.{c.LWS_GROUP}",
    f"{c.DS_PLURAL}.{c.DS_GROUP}",
    f"{c.DSRS_PLURAL}.{c.DS_GROUP}",
]


def _cli() -> typer.Typer:
    # The same two functions cli/main.py mounts as `lws crds` and `lws install`.
    app = typer.Typer()
    app.command("crds")(crds_command)
    app.command("install")(install_command)
    return app


def test_lws_crds_prints_the_packaged_manifests() -> None:
    result = CliRunner().invoke(_cli(), ["crds"])
    assert result.exit_code == 0, result.output
    assert result.output == "".join(crd_texts())


def test_lws_install_applies_and_is_idempotent(apiserver_cluster: LocalCluster) -> None:
    for _ in range(2):
        result = CliRunner().invoke(
            _cli(), ["install", "--crds-only", "--kubeconfig", str(apiserver_cluster.kubeconfig)]
        )
        assert result.exit_code == 0, result.output
        for name in CRD_NAMES:
            assert f"customresourcedefinition/{name} serverside-applied" in result.output
            assert f"customresourcedefinition/{name} established" in result.output


async def test_installed_crds_are_owned_by_lws_and_established(
    apiserver_cluster: LocalCluster, installed_crds: list[str]
) -> None:
    assert installed_crds == CRD_NAMES
    for name in CRD_NAMES:
        crd = json.loads(
            await kubectl(apiserver_cluster, "get", "crd", name, "-o", "json", "--show-managed-fields")
        )
        managers = {(m["manager"], m["operation"]) for m in crd["metadata"]["managedFields"]}
        assert (c.FIELD_MANAGER, "Apply") in managers
        conditions = {cond["type"]: cond["status"] for cond in crd["status"]["conditions"]}
        assert conditions[CRD_ESTABLISHED] == "True"


def _sample(kind: str) -> dict[str, Any]:
    found = next((obj for _, _, obj in upstream_documents() if obj["kind"] == kind), None)
    if found is None:
        upstream.missing(upstream.upstream_dir() / "samples" / f"<a {kind}>")
    return found


async def _create_one_of_each(kube: AsyncClient, namespace: str) -> None:
    lws_obj, ds_obj = _sample(c.LWS_KIND), _sample(c.DS_KIND)
    for resource, obj in ((LWS, lws_obj), (DS, ds_obj)):
        obj = {**obj, "metadata": {"name": obj["metadata"]["name"], "namespace": namespace}}
        await kube.create(resource.from_dict(obj), namespace=namespace)
    scaler = {
        "apiVersion": c.DS_API_VERSION,
        "kind": c.DSRS_KIND,
        "metadata": {"name": "sample-decode", "namespace": namespace},
        "spec": {"replicas": 2},
    }
    await kube.create(DSRS.from_dict(scaler), namespace=namespace)


def _header(output: str) -> list[str]:
    return output.splitlines()[0].split()


@pytest.mark.parametrize(
    ("resource", "want_header"),
    [
        pytest.param(c.LWS_SHORT_NAME, ["NAME", "READY", "DESIRED", "UP-TO-DATE", "AGE"], id="get lws"),
        pytest.param(
            c.LWS_PLURAL, ["NAME", "READY", "DESIRED", "UP-TO-DATE", "AGE"], id="get leaderworkersets"
        ),
        pytest.param(
            c.DS_PLURAL, ["NAME", "SLICES", "AVAILABLE", "PROGRESSING", "AGE"], id="get disaggregatedsets"
        ),
        pytest.param(c.DSRS_SHORT_NAME, ["NAME", "DESIRED", "CURRENT", "AGE"], id="get dsrs"),
    ],
)
async def test_kubectl_get_shows_the_columns(
    apiserver_cluster: LocalCluster,
    kube: AsyncClient,
    namespace: str,
    installed_crds: list[str],
    resource: str,
    want_header: list[str],
) -> None:
    await _create_one_of_each(kube, namespace)
    output = await kubectl(apiserver_cluster, "get", resource, "-n", namespace)
    assert _header(output) == want_header
    assert len(output.splitlines()) == 2


def _kubectl_binaries() -> list[Any]:
    binaries: list[Any] = [pytest.param(None, id="kubectl-1.37")]
    system = shutil.which("kubectl")  # /usr/bin/kubectl 1.32 on the build machines
    if system:
        binaries.append(pytest.param(Path(system), id="system-kubectl"))
    return binaries


@pytest.mark.parametrize("binary", _kubectl_binaries())
async def test_kubectl_explain_describes_the_leader_worker_template(
    apiserver_cluster: LocalCluster, installed_crds: list[str], binary: Path | None
) -> None:
    async def explained() -> str:
        try:
            return await kubectl(
                apiserver_cluster, "explain", "leaderworkerset.spec.leaderWorkerTemplate", binary=binary
            )
        except AssertionError:
            return ""  # the OpenAPI document is published a moment after Established

    output = await eventually(explained)
    assert c.LWS_GROUP in output
    for field in ("workerTemplate", "leaderTemplate", "size", "restartPolicy", "volumeClaimTemplates"):
        assert field in output
    assert "Pod template of the worker pods." in output
