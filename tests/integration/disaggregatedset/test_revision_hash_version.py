"""Upstream main's `disaggregatedset.x-k8s.io/revision-hash-version` with the webhooks off (the DS
controller alone, in-process): the set keeps the v1.0 revision, the annotation is flagged in a
condition with a Warning event, and removing it clears the flag without a rollout."""

from __future__ import annotations

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.api import upstreammain as um
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    ds_condition,
    expect_children,
    expect_ds_condition,
    expect_ds_event,
    revision_of,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]
KEY = um.ANNOTATION_DS_REVISION_HASH_VERSION


async def test_a_set_asking_for_hash_v2_is_flagged_and_keeps_the_v1_revision(
    api: KubeClient, ns: str
) -> None:
    body = DisaggregatedSetBuilder(ns).role("serve", 1).obj()
    body["metadata"]["annotations"] = {KEY: "v2"}
    ds = await create(api, body)
    child = f"{DS}-0-{revision_of(ds)}-serve"
    await expect_children(api, ns, {child: 1})  # named after the v1.0 revision
    cond = await expect_ds_condition(
        api, ns, um.CONDITION_REVISION_HASH_VERSION_UNSUPPORTED, ext.REASON_INVALID_ANNOTATION
    )
    want = (
        f"annotation {KEY}: 'v2' is invalid: must be absent: this controller computes the v1.0 revision "
        "hash only (upstream main's later algorithm is not implemented); the set keeps the v1.0 revision hash"
    )
    assert cond["message"] == want
    await expect_ds_event(api, ns, um.EVENT_UNSUPPORTED_REVISION_HASH_VERSION, want)

    await api.merge_patch(DISAGGREGATEDSETS, ns, DS, {"metadata": {"annotations": {KEY: None}}})

    async def cleared() -> bool:
        assert await ds_condition(api, ns, um.CONDITION_REVISION_HASH_VERSION_UNSUPPORTED) is None
        return True

    await eventually(cleared)
    await expect_children(api, ns, {child: 1})  # the same child: nothing rolled
