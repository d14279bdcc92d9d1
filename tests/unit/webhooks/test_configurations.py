"""Webhook configurations: upstream's names, paths, rules and selectors; URL rendering; caBundle."""

import base64
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.api.installation import (
    ANNOTATION_CERT_MANAGER_INJECT_CA_FROM,
    CERT_MANAGER_CERTIFICATE_NAME,
)
from leaderworkerset.webhooks.configurations import inject_ca_bundle, render_for_service, render_for_url
from tests.support import upstream

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "webhooks" / "manifests.yaml"


def _upstream_webhooks() -> dict[str, dict[str, Any]]:
    """Upstream's manifests with the pod objectSelector patches applied, keyed by webhook name."""
    docs = list(yaml.safe_load_all(upstream.require("config", "webhook-manifests.yaml").read_text()))
    by_name = {hook["name"]: hook for doc in docs for hook in doc["webhooks"]}
    for patch_file in ("webhook-mutating-patch.yaml", "webhook-validating-patch.yaml"):
        for operation in yaml.safe_load(upstream.require("config", patch_file).read_text()):
            by_name[operation["value"]["name"]] = operation["value"]
    return by_name


def _ours() -> dict[str, dict[str, Any]]:
    return {
        hook["name"]: hook
        for doc in render_for_service("system", "webhook-service")
        for hook in doc["webhooks"]
    }


def test_webhooks_match_upstream_manifests() -> None:
    assert _ours() == _upstream_webhooks()


def test_kinds_and_configuration_names() -> None:
    mutating, validating = render_for_service("lws-system")
    assert (mutating["kind"], mutating["metadata"]["name"]) == (
        "MutatingWebhookConfiguration",
        c.MUTATING_WEBHOOK_CONFIGURATION_NAME,
    )
    assert (validating["kind"], validating["metadata"]["name"]) == (
        "ValidatingWebhookConfiguration",
        c.VALIDATING_WEBHOOK_CONFIGURATION_NAME,
    )


def test_url_configurations_point_at_the_local_server() -> None:
    mutating, validating = render_for_url("127.0.0.1", 9443, b"CA")
    urls = [hook["clientConfig"]["url"] for hook in [*mutating["webhooks"], *validating["webhooks"]]]
    assert f"https://127.0.0.1:9443{c.WEBHOOK_PATH_MUTATE_POD}" in urls
    assert all(
        hook["clientConfig"]["caBundle"] == base64.b64encode(b"CA").decode() for hook in mutating["webhooks"]
    )


def test_inject_ca_bundle_sets_every_webhook() -> None:
    mutating, _ = render_for_service("lws-system")
    injected = inject_ca_bundle(mutating, b"pem")
    assert {hook["clientConfig"]["caBundle"] for hook in injected["webhooks"]} == {
        base64.b64encode(b"pem").decode()
    }
    assert "caBundle" not in mutating["webhooks"][0]["clientConfig"]


def test_committed_manifests_are_current() -> None:
    assert list(yaml.safe_load_all(DEPLOY.read_text())) == render_for_service(c.DEFAULT_NAMESPACE)


def test_cert_manager_variant_asks_for_ca_injection() -> None:
    for configuration in render_for_service("lws-system", cert_manager=True):
        assert configuration["metadata"]["annotations"] == {
            ANNOTATION_CERT_MANAGER_INJECT_CA_FROM: f"lws-system/{CERT_MANAGER_CERTIFICATE_NAME}"
        }
