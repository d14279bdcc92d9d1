"""Structure of the install manifests: upstream's names, consistent selectors, a hardened pod."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from leaderworkerset.api import config as api_config
from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import MANAGER_CONFIG_KEY, SERVICE_ACCOUNT_NAME
from leaderworkerset.install.manifests import InstallOptions, configuration, object_key, render


def _by_key(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {object_key(o): o for o in objects}


OBJECTS = _by_key(render())
NS = c.DEFAULT_NAMESPACE


def test_upstream_object_names() -> None:
    assert set(OBJECTS) == {
        f"Namespace/{NS}",
        f"ServiceAccount/{NS}/lws-controller-manager",
        "ClusterRole/lws-manager-role",
        "ClusterRoleBinding/lws-manager-rolebinding",
        f"Role/{NS}/lws-leader-election-role",
        f"RoleBinding/{NS}/lws-leader-election-rolebinding",
        "ClusterRole/lws-metrics-auth-role",
        "ClusterRoleBinding/lws-metrics-auth-rolebinding",
        "ClusterRole/lws-metrics-reader",
        f"ConfigMap/{NS}/lws-manager-config",
        f"Secret/{NS}/lws-webhook-server-cert",
        f"Service/{NS}/lws-webhook-service",
        f"Service/{NS}/lws-controller-manager-metrics-service",
        f"Deployment/{NS}/lws-controller-manager",
        "MutatingWebhookConfiguration/lws-mutating-webhook-configuration",
        "ValidatingWebhookConfiguration/lws-validating-webhook-configuration",
    }


def test_deployment_selector_is_upstreams_and_matches_its_pods_and_services() -> None:
    deployment = OBJECTS[f"Deployment/{NS}/lws-controller-manager"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    # kustomize's commonLabels put these into upstream's (immutable) selector; equal, so we can take over.
    assert selector == {
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": "lws",
        "app.kubernetes.io/instance": "lws",
    }
    assert deployment["spec"]["template"]["metadata"]["labels"] == selector
    for name in ("lws-webhook-service", "lws-controller-manager-metrics-service"):
        assert OBJECTS[f"Service/{NS}/{name}"]["spec"]["selector"] == selector


def test_manager_pod_is_hardened_and_probed() -> None:
    deployment = OBJECTS[f"Deployment/{NS}/lws-controller-manager"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT_NAME
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8081}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8081}
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in container["volumeMounts"]} == volumes
    # The cert dir must be writable under a read-only root filesystem.
    assert c.DEFAULT_WEBHOOK_CERT_DIR.startswith("/tmp/")
    assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


@pytest.mark.parametrize(
    ("options", "want_gang"),
    [
        pytest.param(InstallOptions(), None, id="default"),
        pytest.param(InstallOptions(gang_scheduler_provider="volcano"), "volcano", id="volcano"),
    ],
)
def test_the_configuration_loads_in_the_manager(options: InstallOptions, want_gang: str | None) -> None:
    text = render(options)[9]["data"][MANAGER_CONFIG_KEY]
    assert yaml.safe_load(text) == configuration(options)
    cfg, warnings = api_config.load_configuration_with_warnings(text)
    assert warnings == []
    gang = cfg.gang_scheduling_management
    assert (gang.scheduler_provider if gang else None) == want_gang


def test_every_namespaced_object_is_in_the_install_namespace() -> None:
    options = InstallOptions(namespace="elsewhere")
    for obj in render(options):
        meta = obj["metadata"]
        if "namespace" in meta:
            assert meta["namespace"] == "elsewhere", object_key(obj)
        for subject in obj.get("subjects", []):
            assert subject["namespace"] == "elsewhere"
