"""Run a process as the install's ServiceAccount: a TokenRequest token in a copy of the kubeconfig.

The manager's install (``install.manifests.render``) is applied with the Deployment at zero replicas
(kwok's fake nodes cannot run the image) and the manager runs as a local process with this
kubeconfig, so every API call it makes is authorised by the generated RBAC and nothing else.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import SERVICE_ACCOUNT_NAME
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.install import apply as installer
from leaderworkerset.install.manifests import InstallOptions, render
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import ResourceRef

CLUSTER_ROLES = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False
)
CLUSTER_ROLE_BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
# An authorizer's refusal, as the API server words it (JSON logs escape the quotes). Other 403s, such
# as "unable to create new content in namespace X because it is being terminated", are admission's.
RBAC_DENIAL = re.compile(r'forbidden: User \\*"[^"\\]*\\*" cannot')


def rbac_denials(log: str) -> list[str]:
    return [line for line in log.splitlines() if RBAC_DENIAL.search(line)]


DEV_URL_MODE_ROLE_NAME = "lws-e2e-dev-url-mode"
# Local dev URL mode (the API server calls the manager on 127.0.0.1) applies its own webhook
# configurations and namespace; a pod in the cluster does neither, so the install does not grant it.
DEV_URL_MODE_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": DEV_URL_MODE_ROLE_NAME},
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
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }


def token(cluster: LocalCluster, service_account: str, namespace: str = c.DEFAULT_NAMESPACE) -> str:
    """A bound token from the TokenRequest API (what a pod's projected token is)."""
    out = subprocess.run(
        [str(cluster.kubectl), f"--kubeconfig={cluster.kubeconfig}", "create", "token", service_account,
         "-n", namespace, "--duration=6h"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def kubeconfig_as(cluster: LocalCluster, service_account: str, path: Path) -> Path:
    """The cluster's kubeconfig with the admin credentials replaced by the account's token."""
    return kubeconfig_with_user(cluster, {"token": token(cluster, service_account)}, path)


# An exec credential plugin (run as `python plugin.py TOKEN_FILE RUNS_FILE`): prints an ExecCredential
# with the token in TOKEN_FILE and counts its runs in RUNS_FILE.
EXEC_PLUGIN = """
import json, pathlib, sys
token_file, runs = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
runs.write_text(str(int(runs.read_text() or 0) + 1) if runs.exists() else "1")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": token_file.read_text().strip()}}))
"""


def exec_user(plugin: Path, token_file: Path, runs: Path) -> dict[str, Any]:
    """A kubeconfig user whose credentials come from EXEC_PLUGIN (written to `plugin`)."""
    plugin.write_text(EXEC_PLUGIN)
    return {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
        "args": [str(plugin), str(token_file), str(runs)],
    }}  # fmt: skip


def kubeconfig_with_user(cluster: LocalCluster, user: dict[str, Any], path: Path) -> Path:
    """The cluster's kubeconfig with the admin credentials replaced by `user` (a token, a token file,
    an exec plugin)."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["users"]:
        entry["user"] = user
    path.write_text(yaml.safe_dump(config))
    return path


# The install's webhook configurations point at the in-cluster Service, which no pod backs here.
_WEBHOOK_CONFIGURATION_KINDS = frozenset(("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))


async def install_for_local_manager(api: KubeClient, *, webhook_configurations: bool = True) -> None:
    """The generated install with no manager pods, plus the dev URL mode's own grants.

    `webhook_configurations=False` leaves the webhook configurations as they are: for a test that
    runs beside the session's shared manager, which serves them in URL mode (re-applying the
    install would point them at the Service, and every later LWS write would fail to call them)."""
    objects = render(InstallOptions(replicas=0))
    if not webhook_configurations:
        objects = [obj for obj in objects if obj["kind"] not in _WEBHOOK_CONFIGURATION_KINDS]
    await installer.apply_objects(api.lightkube, objects)
    await api.apply(CLUSTER_ROLES, DEV_URL_MODE_ROLE)
    await api.apply(
        CLUSTER_ROLE_BINDINGS,
        binding(DEV_URL_MODE_ROLE_NAME, DEV_URL_MODE_ROLE_NAME, SERVICE_ACCOUNT_NAME),
    )
