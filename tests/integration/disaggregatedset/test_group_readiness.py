"""Ready capacity a DisaggregatedSet rollout trusts, against the real API server and controller.

As upstream main after v1.0 (`pkg/replicagroups`): Ready counts that the child's LWS controller
wrote before it observed the child's latest spec authorise no drain of the old revision
(docs/compatibility.md, "Upstream main after v1.0"). The test plays the LWS controller.
"""

from __future__ import annotations

import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS
from tests.integration.disaggregatedset.helpers import (
    DS,
    create,
    expect_children,
    revision_of,
    roll_role_image,
    set_child_status,
)
from tests.support.builders import DisaggregatedSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


async def test_counts_for_an_older_spec_do_not_drain_the_old_revision(api: KubeClient, ns: str) -> None:
    ds = await create(api, DisaggregatedSetBuilder(ns).role("serve", 2).obj())
    old = revision_of(ds)
    old_child = f"{DS}-0-{old}-serve"
    await expect_children(api, ns, {old_child: 2})
    await set_child_status(api, ns, old_child, 2, 2, 2)
    new = await roll_role_image(api, ns, 0, NEW_IMAGE, old)
    new_child = f"{DS}-0-{new}-serve"
    # Surge 1: the new child grows to 1 while the old one keeps its 2.
    await expect_children(api, ns, {old_child: 2, new_child: 1})
    generation = int((await api.get(LEADERWORKERSETS, ns, new_child))["metadata"]["generation"])
    await set_child_status(api, ns, new_child, 1, 1, 1, observed=generation - 1)

    async def counted() -> bool:  # the controller has read the new child's counts
        statuses = ((await api.get(DISAGGREGATEDSETS, ns, DS)).get("status") or {}).get("roleStatuses") or []
        assert [s.get("readyReplicas") for s in statuses] == [3], statuses
        return True

    await eventually(counted)

    async def old_kept() -> bool:
        assert (await api.get(LEADERWORKERSETS, ns, old_child))["spec"]["replicas"] == 2
        return True

    # The rollout requeues every second: two more rounds, and the old revision is not drained.
    await consistently(old_kept, duration=2.5)
    await set_child_status(api, ns, new_child, 1, 1, 1, observed=generation)

    async def old_drained() -> bool:  # the new child may grow again right after: only the old is read
        assert (await api.get(LEADERWORKERSETS, ns, old_child))["spec"]["replicas"] == 1
        return True

    await eventually(old_drained)
