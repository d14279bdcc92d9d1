"""The served LWS validating webhook rejects an unusable restart-backoff annotation (naming the
annotation and the rule) and admits a good one unchanged."""

from __future__ import annotations

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.integration.webhooks.test_admission_api import denial, lws

pytestmark = pytest.mark.cluster


async def test_a_bad_backoff_is_denied_naming_the_annotation_and_the_rule(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace)
    body["metadata"]["annotations"] = {ext.ANNOTATION_RESTART_BACKOFF: "base=1m,cap=10s"}
    message = await denial(webhook_client.create(LEADERWORKERSETS, body))
    assert (
        f'metadata.annotations.{ext.ANNOTATION_RESTART_BACKOFF}: Invalid value: "base=1m,cap=10s"' in message
    )
    assert "cap (10s) must not be shorter than base" in message


async def test_a_good_backoff_is_admitted_as_written(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace)
    body["metadata"]["annotations"] = {ext.ANNOTATION_RESTART_BACKOFF: "base=10s,cap=5m,reset=10m"}
    created = await webhook_client.create(LEADERWORKERSETS, body)
    assert created["metadata"]["annotations"][ext.ANNOTATION_RESTART_BACKOFF] == "base=10s,cap=5m,reset=10m"
