"""A full local cluster of its own for the install tests, with the CRDs and the generated install.

Its own cluster because these tests decide which controller runs (ours under its ServiceAccount,
upstream's Go manager): the session's shared `lws_manager` must not be reconciling beside them.
The install is applied with the manager Deployment scaled to zero: kwok's fake nodes cannot run
the image, so the manager runs as a local process, under the install's ServiceAccount.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.install import apply as installer
from leaderworkerset.install.manifests import InstallOptions, render
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.e2e.conftest import MANAGERS
from tests.support import clusters
from tests.support.manager import ManagerProcess

# Local dev URL mode (the API server calls the manager on 127.0.0.1) applies its own webhook
# configurations and namespace; a pod in the cluster does neither, so the install does not grant it.
DEV_URL_MODE_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "lws-e2e-dev-url-mode"},
    "rules": [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["patch"]},
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "verbs": ["patch"],
        },
    ],
}


def binding(
    name: str, role: str, service_account: str, namespace: str = c.DEFAULT_NAMESPACE
) -> dict[str, object]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }


@dataclass
class InstallEnv:
    cluster: LocalCluster
    api: KubeClient

    def token(self, service_account: str, namespace: str = c.DEFAULT_NAMESPACE) -> str:
        """A bound token from the TokenRequest API (what a pod's projected token is)."""
        out = subprocess.run(
            [str(self.cluster.kubectl), f"--kubeconfig={self.cluster.kubeconfig}", "create", "token",
             service_account, "-n", namespace, "--duration=2h"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return out.stdout.strip()

    def kubeconfig_as(self, service_account: str, path: Path) -> Path:
        """The cluster's kubeconfig with the admin credentials replaced by the account's token."""
        config = yaml.safe_load(self.cluster.kubeconfig.read_text())
        for user in config["users"]:
            user["user"] = {"token": self.token(service_account)}
        path.write_text(yaml.safe_dump(config))
        return path


@pytest.fixture(scope="package")
async def install_env() -> AsyncIterator[InstallEnv]:
    workdir = Path(tempfile.mkdtemp(prefix="lws-test-install-"))
    options = ClusterOptions(shape="full", nodes=4, die_with_parent=True)
    cluster = LocalCluster("test-install", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    clusters.STARTED.append(cluster)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    try:
        await install_crds(api.lightkube)
        await installer.apply_objects(api.lightkube, render(InstallOptions(replicas=0)))
        yield InstallEnv(cluster, api)
    finally:
        await api.close()
        clusters.stop(cluster)


async def started(manager: ManagerProcess) -> ManagerProcess:
    MANAGERS.append(manager)  # its log tail is attached to a failing test's report
    await manager.start()
    return manager


async def stopped(manager: ManagerProcess) -> None:
    await manager.stop()
    if manager in MANAGERS:
        MANAGERS.remove(manager)
