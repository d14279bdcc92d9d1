"""Webhook configurations: one table, rendered for the in-cluster Service or for a URL.

Paths, names, rules, objectSelectors, sideEffects and failurePolicy match upstream's
config/webhook manifests (plus the pod objectSelector patches), so upstream tooling that looks
webhooks up by name keeps working.
"""

import base64
from collections.abc import Callable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import (
    ANNOTATION_CERT_MANAGER_INJECT_CA_FROM,
    CERT_MANAGER_CERTIFICATE_NAME,
)
from leaderworkerset.core.objects import MutableObj

ADMISSION_REGISTRATION = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class WebhookSpec:
    name: str
    path: str
    mutating: bool
    group: str
    resource: str
    operations: tuple[str, ...]
    lws_pods_only: bool = False


WEBHOOKS = (
    WebhookSpec(
        c.WEBHOOK_NAME_MUTATE_LWS,
        c.WEBHOOK_PATH_MUTATE_LWS,
        True,
        c.LWS_GROUP,
        c.LWS_PLURAL,
        ("CREATE", "UPDATE"),
    ),
    WebhookSpec(
        c.WEBHOOK_NAME_MUTATE_POD,
        c.WEBHOOK_PATH_MUTATE_POD,
        True,
        "",
        "pods",
        ("CREATE",),
        lws_pods_only=True,
    ),
    WebhookSpec(
        c.WEBHOOK_NAME_VALIDATE_LWS,
        c.WEBHOOK_PATH_VALIDATE_LWS,
        False,
        c.LWS_GROUP,
        c.LWS_PLURAL,
        ("CREATE", "UPDATE"),
    ),
    WebhookSpec(
        c.WEBHOOK_NAME_VALIDATE_POD,
        c.WEBHOOK_PATH_VALIDATE_POD,
        False,
        "",
        "pods",
        ("CREATE", "UPDATE"),
        lws_pods_only=True,
    ),
    WebhookSpec(
        c.WEBHOOK_NAME_VALIDATE_DS,
        c.WEBHOOK_PATH_VALIDATE_DS,
        False,
        c.DS_GROUP,
        c.DS_PLURAL,
        ("CREATE", "UPDATE"),
    ),
)


def _webhook(spec: WebhookSpec, client_config: MutableObj) -> MutableObj:
    webhook: MutableObj = {
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "failurePolicy": "Fail",
        "name": spec.name,
        "rules": [
            {
                "apiGroups": [spec.group],
                "apiVersions": ["v1"],
                "operations": list(spec.operations),
                "resources": [spec.resource],
            }
        ],
        "sideEffects": "None",
    }
    if spec.lws_pods_only:
        webhook["objectSelector"] = {"matchExpressions": [{"key": c.LABEL_SET_NAME, "operator": "Exists"}]}
    return webhook


def _configuration(kind: str, name: str, webhooks: list[MutableObj]) -> MutableObj:
    return {
        "apiVersion": ADMISSION_REGISTRATION,
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": webhooks,
    }


def render(
    client_config_for: Callable[[str], MutableObj], ca_bundle: bytes | None = None, include_ds: bool = True
) -> list[MutableObj]:
    """[MutatingWebhookConfiguration, ValidatingWebhookConfiguration] with the given client configs."""
    mutating: list[MutableObj] = []
    validating: list[MutableObj] = []
    for spec in WEBHOOKS:
        if spec.name == c.WEBHOOK_NAME_VALIDATE_DS and not include_ds:
            continue
        client_config: MutableObj = client_config_for(spec.path)
        if ca_bundle is not None:
            client_config["caBundle"] = base64.b64encode(ca_bundle).decode()
        (mutating if spec.mutating else validating).append(_webhook(spec, client_config))
    return [
        _configuration("MutatingWebhookConfiguration", c.MUTATING_WEBHOOK_CONFIGURATION_NAME, mutating),
        _configuration("ValidatingWebhookConfiguration", c.VALIDATING_WEBHOOK_CONFIGURATION_NAME, validating),
    ]


def render_for_service(
    namespace: str,
    service_name: str = c.DEFAULT_WEBHOOK_SERVICE_NAME,
    ca_bundle: bytes | None = None,
    cert_manager: bool = False,
) -> list[MutableObj]:
    """In-cluster configurations pointing at the webhook Service (port 443 → 9443).

    With `cert_manager`, the CA comes from cert-manager's injector instead of our rotator.
    """
    configurations = render(
        lambda path: {"service": {"name": service_name, "namespace": namespace, "path": path}}, ca_bundle
    )
    if cert_manager:
        source = f"{namespace}/{CERT_MANAGER_CERTIFICATE_NAME}"
        for configuration in configurations:
            configuration["metadata"]["annotations"] = {ANNOTATION_CERT_MANAGER_INJECT_CA_FROM: source}
    return configurations


def render_for_url(host: str, port: int, ca_bundle: bytes | None = None) -> list[MutableObj]:
    """Configurations for the local dev cluster: the API server calls https://<host>:<port>/<path>."""
    return render(lambda path: {"url": f"https://{host}:{port}{path}"}, ca_bundle)


def inject_ca_bundle(configuration: MutableObj, ca_bundle: bytes) -> MutableObj:
    """A copy of a webhook configuration with `caBundle` set on every webhook."""
    encoded = base64.b64encode(ca_bundle).decode()
    webhooks = []
    for webhook in configuration.get("webhooks") or []:
        client_config = {**(webhook.get("clientConfig") or {}), "caBundle": encoded}
        webhooks.append({**webhook, "clientConfig": client_config})
    return {**configuration, "webhooks": webhooks}
