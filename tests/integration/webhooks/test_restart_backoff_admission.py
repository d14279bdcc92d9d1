"""The served LWS webhooks and the restart back-off: an unusable restart-backoff annotation is
rejected (naming the annotation and the rule) and a good one admitted unchanged; upstream main's
typed `leaderWorkerTemplate.restartBackoff` is defaulted when present and refused, with upstream's
wording, where its rules are broken."""

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


async def test_the_typed_field_is_defaulted_when_present_and_absent_stays_absent(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace, name="empty-backoff")
    body["spec"]["leaderWorkerTemplate"]["restartBackoff"] = {}
    created = await webhook_client.create(LEADERWORKERSETS, body)
    assert created["spec"]["leaderWorkerTemplate"]["restartBackoff"] == {"baseSeconds": 10, "capSeconds": 300}
    plain = await webhook_client.create(LEADERWORKERSETS, lws(webhook_namespace, name="no-backoff"))
    assert "restartBackoff" not in plain["spec"]["leaderWorkerTemplate"]


async def test_the_typed_field_is_refused_with_a_policy_that_never_recreates_the_group(
    webhook_client: KubeClient, webhook_namespace: str
) -> None:
    body = lws(webhook_namespace, name="none-backoff")
    body["spec"]["leaderWorkerTemplate"].update(restartPolicy="None", restartBackoff={"baseSeconds": 10})
    message = await denial(webhook_client.create(LEADERWORKERSETS, body))
    assert (
        "spec.leaderWorkerTemplate.restartBackoff: Forbidden: restartBackoff is only supported when "
        "restartPolicy recreates the group"
    ) in message
