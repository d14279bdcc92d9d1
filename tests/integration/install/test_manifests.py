"""The install manifests against the real API server: every object passes a server-side dry run,
and `lws install` / `lws uninstall` apply and remove them (apiserver shape: no Deployment controller,
so `--no-wait`; readiness is covered on the full cluster in tests/e2e/test_install_rbac.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import typer
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from typer.testing import CliRunner

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import (
    CONTROLLER_MANAGER_NAME,
    MANAGER_ROLE_BINDING_NAME,
    MANAGER_ROLE_NAME,
    SERVICE_ACCOUNT_NAME,
)
from leaderworkerset.cli.install import install_command, uninstall_command
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.install import apply as installer
from leaderworkerset.install.manifests import InstallOptions, object_key, render

pytestmark = pytest.mark.cluster


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("install")(install_command)
    app.command("uninstall")(uninstall_command)
    return app


def _kubectl(cluster: LocalCluster, *args: str) -> Any:
    out = subprocess.run(
        [str(cluster.kubectl), f"--kubeconfig={cluster.kubeconfig}", *args, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    return json.loads(out.stdout) if out.returncode == 0 else None


async def test_every_object_passes_a_server_side_dry_run(kube: AsyncClient, namespace: str) -> None:
    # The fresh namespace stands in for lws-system (a dry-run Namespace would not hold the others).
    objects = render(InstallOptions(namespace=namespace))
    keys = await installer.apply_objects(kube, objects, dry_run=True)
    assert keys == [object_key(o) for o in objects]
    assert len(keys) == 16
    with pytest.raises(ApiError) as err:  # nothing was stored
        await kube.get(Deployment, CONTROLLER_MANAGER_NAME, namespace=namespace)
    assert err.value.status.code == 404


def test_install_dry_run_stores_nothing(apiserver_cluster: LocalCluster) -> None:
    ns = "lws-dry-run-only"
    result = CliRunner().invoke(
        _cli(),
        [
            "install",
            *("--kubeconfig", str(apiserver_cluster.kubeconfig), "--dry-run", "-n", ns),
            *("--image", "example.test/lws:1"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"Namespace/{ns} serverside-applied (server dry run)" in result.output
    assert "ClusterRole/lws-manager-role serverside-applied (server dry run)" in result.output
    assert "Deployment/" not in result.output  # namespaced objects need the namespace to exist
    assert _kubectl(apiserver_cluster, "get", "namespace", ns) is None


def test_install_without_an_image_refuses_and_applies_nothing(apiserver_cluster: LocalCluster) -> None:
    # The `lws` command as a user runs it, against a reachable cluster.
    ns = "lws-no-image"
    kubeconfig = str(apiserver_cluster.kubeconfig)
    result = subprocess.run(
        [sys.executable, "-m", "leaderworkerset.cli", "install", "--kubeconfig", kubeconfig, "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith("lws install: no manager image is published yet"), result.stderr
    assert "hack/build-image.sh" in result.stderr
    assert result.stdout == "", "nothing was applied"
    assert _kubectl(apiserver_cluster, "get", "namespace", ns) is None


def test_install_is_idempotent_and_uninstall_keeps_the_crds(apiserver_cluster: LocalCluster) -> None:
    ns = "lws-install-it"
    kubeconfig = str(apiserver_cluster.kubeconfig)
    for _ in range(2):
        result = CliRunner().invoke(
            _cli(),
            ["install", "--kubeconfig", kubeconfig, "-n", ns, "--image", "example.test/lws:1", "--no-wait"],
        )
        assert result.exit_code == 0, result.output
        assert f"Deployment/{ns}/{CONTROLLER_MANAGER_NAME} serverside-applied" in result.output
    deployment = _kubectl(
        apiserver_cluster,
        "get",
        "deployment",
        CONTROLLER_MANAGER_NAME,
        "-n",
        ns,
        "--show-managed-fields",
    )
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "example.test/lws:1"
    managers = {(m["manager"], m["operation"]) for m in deployment["metadata"]["managedFields"]}
    assert (c.FIELD_MANAGER, "Apply") in managers
    binding = _kubectl(apiserver_cluster, "get", "clusterrolebinding", MANAGER_ROLE_BINDING_NAME)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT_NAME, "namespace": ns}]

    result = CliRunner().invoke(_cli(), ["uninstall", "--kubeconfig", kubeconfig, "-n", ns])
    assert result.exit_code == 0, result.output
    assert f"Deployment/{ns}/{CONTROLLER_MANAGER_NAME} deleted" in result.output
    assert "CRDs kept" in result.output
    assert _kubectl(apiserver_cluster, "get", "crd", f"{c.LWS_PLURAL}.{c.LWS_GROUP}") is not None
    assert _kubectl(apiserver_cluster, "get", "clusterrole", MANAGER_ROLE_NAME) is None
    assert _kubectl(apiserver_cluster, "get", "deployment", CONTROLLER_MANAGER_NAME, "-n", ns) is None
