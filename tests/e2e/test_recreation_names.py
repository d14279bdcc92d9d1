"""A recreated group never hands the StatefulSet controller a worker name that is still terminating,
on the full local cluster with `lws manager` as a separate process.

In a rolling update the StatefulSet controller deletes the leader in the background, the garbage
collector then removes the old worker StatefulSet at once and its pods only after their grace
period. A new worker StatefulSet created in between makes kube-controller-manager fail to create
`<leader>-1` ("already exists … object is being deleted") and back off exponentially. A finalizer
on the old worker stands in for a long grace period; the replacement group must wait for it.
Without the wait, kube-controller-manager logs `Error syncing StatefulSet … object is being deleted:
pods "<leader>-1" already exists` for the new worker StatefulSet (no event is recorded for it).
"""

from __future__ import annotations

import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import PODS, STATEFULSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import events_with, expect_deployed
from tests.support.lwsapi import create, pods_by_name, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.objects import LEADER, WORKER, uid
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

HOLD = "test.lws/slow-shutdown"
FAILED_CREATE = "FailedCreate"  # kube-controller-manager's StatefulSet controller, not ours


async def test_a_rolled_group_waits_until_its_old_workers_are_gone(
    api: KubeClient, ns: str, lws_manager: ManagerProcess
) -> None:
    size = 2
    await create(api, LeaderWorkerSetBuilder(ns).replicas(1).size(size).obj())
    await expect_deployed(api, ns, 1, size)
    old_leader = await api.get(PODS, ns, LEADER)
    await api.merge_patch(PODS, ns, WORKER, {"metadata": {"finalizers": [HOLD]}})
    try:
        await update_worker_image(api, ns)

        async def replacement_waits() -> str:
            pods = await pods_by_name(api, ns)
            leader = pods.get(LEADER)
            assert leader is not None, "no leader"
            assert uid(leader) != uid(old_leader), "leader not replaced yet"
            assert leader["spec"].get("nodeName"), "replacement leader not scheduled yet"
            assert pods[WORKER]["metadata"].get("deletionTimestamp"), "old worker not terminating"
            # The pod controller saw the scheduled replacement and chose to wait (its log says so).
            waiting = [
                line
                for line in lws_manager.log_text().splitlines()
                if "worker pod name still taken" in line and f'"{ns}"' in line and WORKER in line
            ]
            assert waiting, "the pod controller has not reconciled the replacement leader yet"
            return uid(leader)

        new_leader_uid = await eventually(replacement_waits, timeout=LONG_TIMEOUT)
        workers = await api.get_or_none(STATEFULSETS, ns, LEADER)
        owners = [ref.get("uid") for ref in (workers or {}).get("metadata", {}).get("ownerReferences") or []]
        assert new_leader_uid not in owners, "worker StatefulSet created over a terminating worker pod"
    finally:
        await api.merge_patch(PODS, ns, WORKER, {"metadata": {"finalizers": None}})

    await expect_deployed(api, ns, 1, size)
    new_workers = await api.get(STATEFULSETS, ns, LEADER)
    assert [ref["uid"] for ref in new_workers["metadata"]["ownerReferences"]] == [new_leader_uid]
    failed = [e.get("note") or e.get("message") for e in await events_with(api, ns, FAILED_CREATE)]
    assert not failed, f"the StatefulSet controller failed to create pods: {failed}"
    # A name collision is not an event: kube-controller-manager logs it and requeues with back-off.
    kcm_log = (lws_manager.cluster.logdir / "kube-controller-manager.log").read_text(errors="replace")
    collisions = [line for line in kcm_log.splitlines() if f'key="{ns}/' in line and "already exists" in line]
    assert not collisions, "the StatefulSet controller hit a terminating name:\n" + "\n".join(collisions[:5])
