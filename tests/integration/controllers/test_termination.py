"""podTerminationPolicy (KEP-956) on the apiserver shape: the test plays the
StatefulSet controller, the garbage collector and the kubelet. A test finalizer keeps a deleted
leader terminating, as a long grace period would on a real node."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support import kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
LEADER = f"{NAME}-0"
HOLD = "test.lws/hold"


async def _group(api: KubeClient, ns: str, policy: str) -> dict[str, Any]:
    """One group of two with its worker StatefulSet in place; returns that StatefulSet."""
    built = LeaderWorkerSetBuilder(ns).replicas(1).size(2).spec_field("podTerminationPolicy", policy)
    lws = await api.create(LEADERWORKERSETS, built.obj())
    await kubelet.create_leader_pods(api, lws, 0, 1)
    return await _worker_sts(api, ns)


async def _get_sts(api: KubeClient, ns: str) -> dict[str, Any]:
    try:
        return await api.get(STATEFULSETS, ns, LEADER)
    except Exception as err:
        raise AssertionError(f"worker statefulset {LEADER}: {err}") from err


async def _worker_sts(api: KubeClient, ns: str, *, not_owned_by: str = "") -> dict[str, Any]:
    async def fetch() -> dict[str, Any]:
        sts = await _get_sts(api, ns)
        owner = sts["metadata"]["ownerReferences"][0]["uid"]
        assert owner != not_owned_by, "still the old group's worker StatefulSet"
        return sts

    return await eventually(fetch)


async def _delete_held_leader(api: KubeClient, ns: str) -> None:
    await api.merge_patch(PODS, ns, LEADER, {"metadata": {"finalizers": [HOLD]}})
    await api.delete(PODS, ns, LEADER)


async def _release(api: KubeClient, ns: str, ref: Any, name: str) -> None:
    """The garbage collector's (or kubelet's) part: let a terminating object go."""
    await api.merge_patch(ref, ns, name, {"metadata": {"finalizers": None}})


async def test_parallel_leader_deletion_deletes_its_workers_at_once(api: KubeClient, ns: str) -> None:
    sts = await _group(api, ns, c.POD_TERMINATION_POLICY_PARALLEL)
    leader_sts = await kubelet.leader_statefulset(api, ns, NAME)
    template_annotations = leader_sts["spec"]["template"]["metadata"]["annotations"]
    assert template_annotations[c.ANNOTATION_POD_TERMINATION_POLICY] == c.POD_TERMINATION_POLICY_PARALLEL

    await _delete_held_leader(api, ns)

    async def workers_terminating() -> bool:
        live = await _get_sts(api, ns)
        assert live["metadata"]["uid"] == sts["metadata"]["uid"]
        assert live["metadata"].get("deletionTimestamp"), "worker StatefulSet not deleted with its leader"
        # Foreground: the workers go before their StatefulSet does.
        assert "foregroundDeletion" in (live["metadata"].get("finalizers") or [])
        return True

    await eventually(workers_terminating)
    leader = await api.get(PODS, ns, LEADER)
    assert leader["metadata"].get("deletionTimestamp"), "the leader is still terminating meanwhile"
    await _release(api, ns, PODS, LEADER)


async def test_default_leader_deletion_leaves_workers_to_the_garbage_collector(
    api: KubeClient, ns: str
) -> None:
    await _group(api, ns, c.POD_TERMINATION_POLICY_DEFAULT)
    leader_sts = await kubelet.leader_statefulset(api, ns, NAME)
    annotations = leader_sts["spec"]["template"]["metadata"].get("annotations") or {}
    assert c.ANNOTATION_POD_TERMINATION_POLICY not in annotations

    await _delete_held_leader(api, ns)
    await processed.expect_pods_processed(api, ns, [LEADER])

    async def workers_kept() -> bool:
        live = await _get_sts(api, ns)
        return live["metadata"].get("deletionTimestamp") is None

    await consistently(workers_kept)
    await _release(api, ns, PODS, LEADER)


async def test_replacement_leader_waits_for_the_old_worker_statefulset(api: KubeClient, ns: str) -> None:
    old = await _group(api, ns, c.POD_TERMINATION_POLICY_PARALLEL)
    old_leader_uid = old["metadata"]["ownerReferences"][0]["uid"]
    await _delete_held_leader(api, ns)

    async def old_terminating() -> bool:
        return bool((await _get_sts(api, ns))["metadata"].get("deletionTimestamp"))

    await eventually(old_terminating)
    # The old leader goes; the leader StatefulSet's replacement arrives while its group still tears down.
    await _release(api, ns, PODS, LEADER)
    lws = await kubelet.get_lws(api, ns, NAME)

    async def old_leader_gone() -> bool:
        return not await api.list(PODS, ns, label_selector=f"{c.LABEL_WORKER_INDEX}=0")

    await eventually(old_leader_gone)
    (new_leader,) = await kubelet.create_leader_pods(api, lws, 0, 1)
    await processed.expect_pods_processed(api, ns, [LEADER])

    async def old_one_untouched() -> bool:
        live = await _get_sts(api, ns)
        return live["metadata"]["uid"] == old["metadata"]["uid"] and bool(
            live["metadata"].get("deletionTimestamp")
        )

    await consistently(old_one_untouched)
    await _release(api, ns, STATEFULSETS, LEADER)
    new = await _worker_sts(api, ns, not_owned_by=old_leader_uid)
    assert new["metadata"]["ownerReferences"][0]["uid"] == new_leader["metadata"]["uid"]
    assert new["metadata"].get("deletionTimestamp") is None


async def test_parallel_lws_deletion_deletes_every_worker_statefulset(api: KubeClient, ns: str) -> None:
    built = (
        LeaderWorkerSetBuilder(ns)
        .replicas(2)
        .size(2)
        .spec_field("podTerminationPolicy", c.POD_TERMINATION_POLICY_PARALLEL)
    )
    lws = await api.create(LEADERWORKERSETS, built.obj())
    await kubelet.create_leader_pods(api, lws, 0, 2)

    async def both_groups() -> list[str]:
        names = await _worker_sts_names(api, ns)
        assert names == [f"{NAME}-0", f"{NAME}-1"], names
        return names

    await eventually(both_groups)
    # Held, as a restart-budget finalizer or a foreground delete would hold it; no garbage
    # collector runs here, so only the controller can touch the worker StatefulSets.
    await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"metadata": {"finalizers": [HOLD]}})
    await api.delete(LEADERWORKERSETS, ns, NAME)

    async def all_terminating() -> bool:
        for sts in await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}"):
            if sts["metadata"]["name"] != NAME:
                assert sts["metadata"].get("deletionTimestamp"), f"{sts['metadata']['name']} not deleted"
        return True

    await eventually(all_terminating)
    leader_sts = await api.get(STATEFULSETS, ns, NAME)
    assert leader_sts["metadata"].get("deletionTimestamp") is None, "the leader StatefulSet is the GC's"
    await _release(api, ns, LEADERWORKERSETS, NAME)


async def _worker_sts_names(api: KubeClient, ns: str) -> list[str]:
    all_sts = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    return sorted(s["metadata"]["name"] for s in all_sts if s["metadata"]["name"] != NAME)
