"""Scaling during a rollout (`spec.scalingPolicy.duringRollout`, upstream main after v1.0, KEP-1022)
against the real API server: the CRD defaults and validates the field, changing it rolls nothing, and
the DS controller applies a lower target to the new revision while the old one still serves only
under `AdvanceRollout`. The test plays the LWS controller (child status)."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    expect_children,
    expect_ds_event,
    revision_of,
    set_child_status,
    update_spec,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
ROLE = "decode"
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


def _ds(ns: str, policy: Obj | None) -> Obj:
    # maxSurge 100%: a rollout requests the whole new target at once.
    ds = DisaggregatedSetBuilder(ns).role(ROLE, 1).role_rollout(ROLE, "100%", 0).obj()
    if policy is not None:
        ds["spec"]["scalingPolicy"] = policy
    return ds


async def _initial_of(api: KubeClient, ns: str, name: str) -> str | None:
    lws = await api.get(LEADERWORKERSETS, ns, name)
    value: str | None = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_DS_INITIAL_REPLICAS)
    return value


@pytest.mark.parametrize("policy", [um.SCALING_ADVANCE_ROLLOUT, um.SCALING_ROLLOUT_COUPLED])
async def test_a_lower_target_reaches_the_new_revision_mid_rollout_only_when_advancing(
    api: KubeClient, ns: str, policy: str
) -> None:
    ds = await create(api, _ds(ns, {"duringRollout": policy}))
    old = f"{DS}-0-{revision_of(ds)}-{ROLE}"
    await expect_children(api, ns, {old: 1})
    await set_child_status(api, ns, old, 1, 1, 1)

    def new_image_and_three(spec: Obj) -> None:
        role = spec["roles"][0]
        role["spec"]["replicas"] = 3
        role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = NEW_IMAGE

    new = f"{DS}-0-{revision_of(await update_spec(api, ns, new_image_and_three))}-{ROLE}"
    await expect_children(api, ns, {old: 1, new: 3})
    await set_child_status(api, ns, new, 3, 0, 3)  # requested, none Ready yet

    def one(spec: Obj) -> None:
        spec["roles"][0]["spec"]["replicas"] = 1

    await update_spec(api, ns, one)

    async def target_seen() -> bool:  # the controller planned with the new target
        assert await _initial_of(api, ns, new) == "1"
        return True

    await eventually(target_seen)
    if policy == um.SCALING_ADVANCE_ROLLOUT:
        # The old revision alone keeps the floor of 1: it may not drain, so the new one gives back
        # its unready surplus now, down to target + maxSurge - old = 1.
        await expect_children(api, ns, {old: 1, new: 1})
        await set_child_status(api, ns, new, 1, 1, 1)
    else:

        async def new_kept() -> bool:
            replicas = (await api.get(LEADERWORKERSETS, ns, new))["spec"]["replicas"]
            assert replicas == 3, f"the new revision went to {replicas} mid-rollout"
            return True

        await consistently(new_kept, duration=1.5)
        await set_child_status(api, ns, new, 3, 3, 3)
    # Either way the rollout ends at the target (v1.0's after it, by scaling) and the old revision goes.
    await expect_children(api, ns, {new: 1})
    new_revision = new.removeprefix(f"{DS}-0-").removesuffix(f"-{ROLE}")
    await expect_ds_event(
        api, ns, c.EVENT_ROLLING_UPDATE_COMPLETED, f"Completed rolling update to revision {new_revision}"
    )


async def test_the_policy_is_defaulted_validated_and_rolls_nothing(api: KubeClient, ns: str) -> None:
    ds = await create(api, _ds(ns, {}))
    assert ds["spec"]["scalingPolicy"] == {"duringRollout": um.SCALING_ROLLOUT_COUPLED}
    child = f"{DS}-0-{revision_of(ds)}-{ROLE}"
    await expect_children(api, ns, {child: 1})

    bad = {"spec": {"scalingPolicy": {"duringRollout": "Sometimes"}}}
    with pytest.raises(ApiStatusError) as refused:
        await api.merge_patch(DISAGGREGATEDSETS, ns, DS, bad)
    assert refused.value.code == 422
    assert "spec.scalingPolicy.duringRollout" in str(refused.value)
    assert '"RolloutCoupled", "AdvanceRollout"' in str(refused.value)

    patch = {"spec": {"scalingPolicy": {"duringRollout": um.SCALING_ADVANCE_ROLLOUT}}}
    changed = await api.merge_patch(DISAGGREGATEDSETS, ns, DS, patch)
    assert revision_of(changed) == revision_of(ds)

    async def observed() -> bool:  # the controller reconciled the changed set
        status = (await api.get(DISAGGREGATEDSETS, ns, DS)).get("status") or {}
        assert status.get("observedGeneration") == changed["metadata"]["generation"], status
        return True

    await eventually(observed)
    await expect_children(api, ns, {child: 1})  # the same child: no new revision, no rollout
