"""A DisaggregatedSet's surge-fallback-seconds with the webhooks off (the DS controller alone,
in-process): a bad value is flagged in a condition with a Warning event and ignored; fixed, the
flag goes. The rollout itself runs on the full cluster (tests/e2e/test_capacity_aware_surge_ds.py)."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    ds_condition,
    expect_ds_condition,
    expect_ds_event,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]
KEY = ext.ANNOTATION_SURGE_FALLBACK_SECONDS


async def test_a_bad_value_is_flagged_ignored_and_cleared_once_fixed(api: KubeClient, ns: str) -> None:
    body = DisaggregatedSetBuilder(ns).role("prefill", 2).role("decode", 1).obj()
    body["metadata"]["annotations"] = {KEY: "soon"}
    await create(api, body)
    cond = await expect_ds_condition(
        api, ns, ext.CONDITION_SURGE_FALLBACK_INVALID, ext.REASON_INVALID_ANNOTATION
    )
    want = (
        f"annotation {KEY}: 'soon' is invalid: must be a whole number of seconds from 1 to 86400; "
        "the surge is never given back (as upstream)"
    )
    assert cond["message"] == want
    await expect_ds_event(api, ns, ext.EVENT_INVALID_SURGE_FALLBACK, want)

    await api.merge_patch(DISAGGREGATEDSETS, ns, DS, {"metadata": {"annotations": {KEY: "30"}}})

    async def cleared() -> bool:
        assert await ds_condition(api, ns, ext.CONDITION_SURGE_FALLBACK_INVALID) is None
        return True

    await eventually(cleared)
    stored = await api.get(DISAGGREGATEDSETS, ns, DS)
    types = {cond["type"] for cond in stored["status"]["conditions"]}
    assert c.CONDITION_AVAILABLE in types or c.CONDITION_PROGRESSING in types  # upstream's stay
    assert ext.CONDITION_SURGE_FALLBACK not in types  # nothing rolled: no fallback
