"""Every object of an in-cluster install, as plain dicts (pure; no I/O).

Names and selectors are upstream's kustomize output (namespace ``lws-system``, prefix ``lws-``,
selector ``control-plane: controller-manager`` plus ``app.kubernetes.io/name|instance: lws``), so
applying these over an upstream install takes its objects over in place: a Deployment's selector is
immutable, and the webhook configurations and the Secret are found by name.

One generator (``python -m leaderworkerset.install.generate``) writes them to ``deploy/manifests/``;
``lws install`` applies the same dicts, and the Helm chart is tested to render the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.api.installation import (
    ANNOTATION_DEFAULT_CONTAINER,
    APP_NAME,
    CONTROL_PLANE_CONTROLLER_MANAGER,
    CONTROLLER_MANAGER_NAME,
    LABEL_APP_INSTANCE,
    LABEL_APP_MANAGED_BY,
    LABEL_APP_NAME,
    LABEL_CONTROL_PLANE,
    MANAGER_CONFIG_KEY,
    MANAGER_CONFIG_MAP_NAME,
    MANAGER_CONTAINER_NAME,
    METRICS_SERVICE_NAME,
    SERVICE_ACCOUNT_NAME,
)
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.install import rbac
from leaderworkerset.install.image import manifest_image
from leaderworkerset.webhooks.configurations import render_for_service

CONFIG_MOUNT_PATH = "/controller_manager_config.yaml"
HEALTH_PORT = 8081
METRICS_PORT = 8443
# The image runs as this user (distroless "nonroot"); the pod pins it so the policy is explicit.
NONROOT_UID = 65532


@dataclass(frozen=True)
class InstallOptions:
    namespace: str = c.DEFAULT_NAMESPACE
    # `lws install` always names one (--image, or the published image: install/image.py).
    image: str = field(default_factory=manifest_image)
    image_pull_policy: str = "IfNotPresent"
    replicas: int = 2
    features: tuple[rbac.Feature, ...] = (rbac.Feature.DISAGGREGATED_SET,)
    gang_scheduler_provider: str | None = None
    resources: MutableObj = field(default_factory=lambda: {"requests": {"cpu": "1", "memory": "1Gi"}})


def selector_labels() -> dict[str, str]:
    return {
        LABEL_CONTROL_PLANE: CONTROL_PLANE_CONTROLLER_MANAGER,
        LABEL_APP_NAME: APP_NAME,
        LABEL_APP_INSTANCE: APP_NAME,
    }


def common_labels() -> dict[str, str]:
    return {
        LABEL_APP_NAME: APP_NAME,
        LABEL_APP_INSTANCE: APP_NAME,
        LABEL_APP_MANAGED_BY: c.FIELD_MANAGER,
    }


def configuration(options: InstallOptions) -> MutableObj:
    """The manager's Configuration file (config.lws.x-k8s.io/v1)."""
    cfg: MutableObj = {
        "apiVersion": c.CONFIG_API_VERSION_V1,
        "kind": c.CONFIG_KIND,
        "leaderElection": {"leaderElect": True},
        "internalCertManagement": {"enable": True},
    }
    if options.gang_scheduler_provider:
        cfg["gangSchedulingManagement"] = {"schedulerProvider": options.gang_scheduler_provider}
    return cfg


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> MutableObj:
    meta: MutableObj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels if labels is not None else common_labels()
    return meta


def _service(name: str, namespace: str, port: MutableObj) -> MutableObj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace),
        "spec": {"ports": [port], "selector": selector_labels()},
    }


def deployment(options: InstallOptions) -> MutableObj:
    selector = selector_labels()
    container: MutableObj = {
        "name": MANAGER_CONTAINER_NAME,
        "image": options.image,
        "imagePullPolicy": options.image_pull_policy,
        # The image's entrypoint is `lws manager`; only the flags go here.
        "args": [f"--config={CONFIG_MOUNT_PATH}"],
        # The in-place restart agent sidecar runs from this same image (docs/in-place-restart.md).
        "env": [{"name": ext.ENV_RESTART_AGENT_IMAGE, "value": options.image}],
        "ports": [
            {"name": "webhook-server", "containerPort": c.DEFAULT_WEBHOOK_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": {
            "httpGet": {"path": c.DEFAULT_LIVENESS_ENDPOINT, "port": HEALTH_PORT},
            "initialDelaySeconds": 15,
            "periodSeconds": 20,
        },
        "readinessProbe": {
            "httpGet": {"path": c.DEFAULT_READINESS_ENDPOINT, "port": HEALTH_PORT},
            "initialDelaySeconds": 5,
            "periodSeconds": 10,
        },
        "resources": options.resources,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {
                "name": "manager-config",
                "mountPath": CONFIG_MOUNT_PATH,
                "subPath": MANAGER_CONFIG_KEY,
            },
            # The root filesystem is read-only; the cert dir (/tmp/k8s-webhook-server/...) lives here,
            # written by the manager from the Secret it rotates.
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(CONTROLLER_MANAGER_NAME, options.namespace, {**common_labels(), **selector}),
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "annotations": {ANNOTATION_DEFAULT_CONTAINER: MANAGER_CONTAINER_NAME},
                    "labels": selector,
                },
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT_NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": NONROOT_UID,
                        "runAsGroup": NONROOT_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "terminationGracePeriodSeconds": 10,
                    "containers": [container],
                    # Two replicas on two nodes: a node loss keeps a webhook server answering.
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": selector},
                        }
                    ],
                    "volumes": [
                        {
                            "name": "manager-config",
                            "configMap": {"name": MANAGER_CONFIG_MAP_NAME},
                        },
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                    ],
                },
            },
        },
    }


def granted_features(options: InstallOptions) -> tuple[rbac.Feature, ...]:
    """The optional parts whose rules the install grants; gang-scheduling rules follow the provider."""
    by_provider = {
        c.SCHEDULER_PROVIDER_VOLCANO: (rbac.Feature.VOLCANO,),
        c.SCHEDULER_PROVIDER_KUBERNETES: (rbac.Feature.WORKLOAD_API,),
    }
    return (*options.features, *by_provider.get(options.gang_scheduler_provider or "", ()))


def render(options: InstallOptions | None = None) -> list[MutableObj]:
    """Every object of the install (CRDs excluded: ``crd.packaged`` has them), in apply order."""
    options = options or InstallOptions()
    ns = options.namespace
    labels = common_labels()
    objects: list[MutableObj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns)},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(SERVICE_ACCOUNT_NAME, ns),
        },
        *rbac.render(rbac.for_features(rbac.rules(), granted_features(options)), ns, labels),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(MANAGER_CONFIG_MAP_NAME, ns),
            "data": {MANAGER_CONFIG_KEY: yaml.safe_dump(configuration(options), sort_keys=False)},
        },
        # Created empty, as upstream; the manager fills it. Applying it again never clears the data
        # (server-side apply only touches fields this manager set).
        {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(c.DEFAULT_WEBHOOK_SECRET_NAME, ns)},
        _service(
            c.DEFAULT_WEBHOOK_SERVICE_NAME,
            ns,
            {"port": 443, "protocol": "TCP", "targetPort": c.DEFAULT_WEBHOOK_PORT},
        ),
        _service(
            METRICS_SERVICE_NAME,
            ns,
            {"name": "https", "port": METRICS_PORT, "protocol": "TCP", "targetPort": METRICS_PORT},
        ),
        deployment(options),
    ]
    for configuration_ in render_for_service(ns):
        configuration_["metadata"]["labels"] = dict(labels)
        objects.append(configuration_)
    return objects


def object_key(obj: MutableObj) -> str:
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{obj['kind']}/{ns}/{meta['name']}" if ns else f"{obj['kind']}/{meta['name']}"


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a shared dict (the selector labels) out in full each time: no &id001 anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(objects: list[MutableObj]) -> str:
    return "".join("---\n" + yaml.dump(obj, Dumper=_NoAliasDumper, sort_keys=False) for obj in objects)
