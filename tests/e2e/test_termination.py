"""podTerminationPolicy Parallel on the full local cluster (real StatefulSet controller and garbage
collector, kwok nodes), with `lws manager` as a separate process: a deleted leader's workers go
away while the leader itself is still terminating, and the group comes back whole."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import PODS, STATEFULSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import expect_deployed, expect_first_group_back
from tests.support.lwsapi import create, pods_by_name
from tests.support.objects import LEADER, uid
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

# Stands in for a long terminationGracePeriodSeconds: the leader stays terminating until released.
HOLD = "test.lws/hold"


async def test_parallel_workers_go_away_together_with_their_terminating_leader(
    api: KubeClient, ns: str
) -> None:
    size = 3
    built = LeaderWorkerSetBuilder(ns).replicas(1).size(size)
    await create(api, built.spec_field("podTerminationPolicy", c.POD_TERMINATION_POLICY_PARALLEL).obj())
    await expect_deployed(api, ns, 1, size)
    leader = await api.get(PODS, ns, LEADER)
    assert (
        leader["metadata"]["annotations"][c.ANNOTATION_POD_TERMINATION_POLICY]
        == c.POD_TERMINATION_POLICY_PARALLEL
    )
    old_sts_uid = uid(await api.get(STATEFULSETS, ns, LEADER))

    await api.merge_patch(PODS, ns, LEADER, {"metadata": {"finalizers": [HOLD]}})
    await api.delete(PODS, ns, LEADER)

    async def workers_gone_leader_terminating() -> bool:
        pods = await pods_by_name(api, ns)
        workers = [n for n in pods if n.startswith(f"{LEADER}-")]
        assert not workers, f"workers still present: {sorted(workers)}"
        held = pods[LEADER]
        assert uid(held) == uid(leader), "leader replaced before its workers went"
        assert held["metadata"].get("deletionTimestamp"), "leader not terminating"
        return True

    # Under Default the garbage collector would not touch the workers before the leader is gone.
    await eventually(workers_gone_leader_terminating, timeout=LONG_TIMEOUT)

    await api.merge_patch(PODS, ns, LEADER, {"metadata": {"finalizers": None}})
    await expect_first_group_back(api, ns, uid(leader), size)
    assert uid(await api.get(STATEFULSETS, ns, LEADER)) != old_sts_uid
    await expect_deployed(api, ns, 1, size)
