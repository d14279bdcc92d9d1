"""Nothing is silently ignored: an LWS with a field the controllers do not act on, admitted while
the webhooks were off, is reported on the object (Warning event + condition) and left alone."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, STATEFULSETS
from tests.integration.controllers import expect
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently

pytestmark = [pytest.mark.cluster]


async def test_hash_identity_is_reported_not_silently_skipped(api: KubeClient, ns: str) -> None:
    body = LeaderWorkerSetBuilder(ns).obj()
    body["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    await api.create(LEADERWORKERSETS, body)
    await expect.expect_condition(
        api, ns, c.CONDITION_PROGRESSING, c.CONDITION_FALSE, c.MESSAGE_UNSUPPORTED_GROUP_IDENTITY
    )
    await expect.expect_event(
        api, ns, c.REASON_UNSUPPORTED_GROUP_IDENTITY, c.MESSAGE_UNSUPPORTED_GROUP_IDENTITY, "Warning"
    )

    async def nothing_created() -> bool:
        return not await api.list(STATEFULSETS, ns)

    await consistently(nothing_created)
    # Reported once per generation, not on every reconcile.
    assert len(await expect.events_with(api, ns, c.REASON_UNSUPPORTED_GROUP_IDENTITY)) == 1
