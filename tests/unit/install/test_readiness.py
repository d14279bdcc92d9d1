"""When `lws install` considers the manager ready (pure predicates over API objects)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest
from lightkube.models.admissionregistration_v1 import ValidatingWebhook, WebhookClientConfig
from lightkube.models.apps_v1 import DeploymentSpec, DeploymentStatus
from lightkube.models.discovery_v1 import Endpoint, EndpointConditions
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.admissionregistration_v1 import ValidatingWebhookConfiguration
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.discovery_v1 import EndpointSlice

from leaderworkerset.install.apply import deployment_ready, webhooks_ready


@dataclass(frozen=True)
class Case:
    generation: int
    observed: int
    updated: int
    available: int
    want_ready: bool


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(1, 1, 2, 2, True), id="all-updated-and-available"),
        pytest.param(Case(2, 1, 2, 2, False), id="new-generation-not-observed"),
        pytest.param(Case(1, 1, 2, 1, False), id="one-replica-unavailable"),
        pytest.param(Case(1, 1, 1, 2, False), id="rollout-in-progress"),
    ],
)
def test_deployment_ready(case: Case) -> None:
    deployment = Deployment(
        metadata=ObjectMeta(name="lws-controller-manager", generation=case.generation),
        spec=DeploymentSpec(replicas=2, selector=LabelSelector(), template=None),  # type: ignore[arg-type]
        status=DeploymentStatus(
            observedGeneration=case.observed, updatedReplicas=case.updated, availableReplicas=case.available
        ),
    )
    assert deployment_ready(deployment) is case.want_ready


CA = b"-----BEGIN CERTIFICATE-----\nTHIS-CA\n-----END CERTIFICATE-----\n"
OTHER = b"-----BEGIN CERTIFICATE-----\nOLD-CA\n-----END CERTIFICATE-----\n"


@dataclass(frozen=True)
class WebhookCase:
    bundle: bytes | None
    secret_ca: bytes | None
    endpoint_ready: bool
    want_ready: bool


def _configuration(bundle: bytes | None) -> ValidatingWebhookConfiguration:
    encoded = base64.b64encode(bundle).decode() if bundle is not None else None
    return ValidatingWebhookConfiguration(
        metadata=ObjectMeta(name="lws-validating-webhook-configuration"),
        webhooks=[
            ValidatingWebhook(
                name="vleaderworkerset.kb.io",
                admissionReviewVersions=["v1"],
                sideEffects="None",
                clientConfig=WebhookClientConfig(caBundle=encoded),
            )
        ],
    )


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(WebhookCase(CA, CA, True, True), id="our-ca-injected-and-an-endpoint"),
        pytest.param(WebhookCase(OTHER + CA, CA, True, True), id="rotation-bundle-holds-our-ca"),
        pytest.param(WebhookCase(OTHER, CA, True, False), id="stale-bundle-from-an-earlier-install"),
        pytest.param(WebhookCase(None, CA, True, False), id="not-injected-yet"),
        pytest.param(WebhookCase(CA, None, True, False), id="secret-still-empty"),
        pytest.param(WebhookCase(CA, CA, False, False), id="no-ready-endpoint"),
    ],
)
def test_webhooks_ready(case: WebhookCase) -> None:
    slices = [
        EndpointSlice(
            addressType="IPv4",
            endpoints=[
                Endpoint(addresses=["10.0.0.9"], conditions=EndpointConditions(ready=case.endpoint_ready))
            ],
        )
    ]
    assert webhooks_ready([_configuration(case.bundle)], slices, case.secret_ca) is case.want_ready
