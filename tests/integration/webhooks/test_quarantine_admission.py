"""The served LWS validating webhook rejects an unusable node-quarantine annotation (naming the
annotation and the rule) and admits a good one unchanged."""

from __future__ import annotations

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.integration.webhooks.test_admission_api import denial, lws

pytestmark = pytest.mark.cluster


async def test_a_bad_quarantine_is_denied_naming_the_annotation_and_the_rule(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace)
    body["metadata"]["annotations"] = {ext.ANNOTATION_QUARANTINE_AFTER: "0/10m"}
    message = await denial(webhook_client.create(LEADERWORKERSETS, body))
    assert f'metadata.annotations.{ext.ANNOTATION_QUARANTINE_AFTER}: Invalid value: "0/10m"' in message
    assert "failures must be an integer from 1 to 100" in message


async def test_a_good_quarantine_is_admitted_as_written(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace)
    body["metadata"]["annotations"] = {
        ext.ANNOTATION_QUARANTINE_AFTER: "3/10m",
        ext.ANNOTATION_QUARANTINE_COOLDOWN: "30m",
    }
    created = await webhook_client.create(LEADERWORKERSETS, body)
    annotations = created["metadata"]["annotations"]
    assert annotations[ext.ANNOTATION_QUARANTINE_AFTER] == "3/10m"
    assert annotations[ext.ANNOTATION_QUARANTINE_COOLDOWN] == "30m"
