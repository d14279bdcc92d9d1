"""User journeys on the full local cluster, with `lws manager` (controllers + webhooks) as a
separate process: upstream's e2e suite (test/e2e/e2e_test.go) plus a controller crash.

Every test works in a fresh namespace on the shared cluster and manager. Where a journey needs to
see *every* intermediate state (the surge peak of a rollout, the ready groups during one, how often
a group was recreated), it watches the objects from a consistent list onward instead of sampling.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    LEADERWORKERSETS,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.cli import kubectl
from tests.support.expect import (
    events_with,
    expect_deployed,
    expect_event,
    expect_gone,
    expect_groups_available,
    expect_lws_owned_revisions,
    expect_valid_services,
    expect_valid_worker_statefulsets,
)
from tests.support.lwsapi import create, leader_statefulset_revision_key, pods_by_name, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.objects import (
    group_of,
    group_states,
    is_leader,
    is_ready,
    labels,
    ordinals,
    ready_groups,
    uid,
)
from tests.support.wait import LONG_TIMEOUT, consistently, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]


# ----- how often a group was recreated, and by whom ------------------------------------------------
def leader_uids_by_group(watch: Watch) -> dict[int, set[str]]:
    """Every leader pod UID each group ever had while ``watch`` ran: >1 means the group was recreated."""
    seen: dict[int, set[str]] = defaultdict(set)
    for pod in watch.added:
        if is_leader(pod):
            seen[group_of(pod)].add(uid(pod))
    return dict(seen)


def expect_each_group_recreated_once(watch: Watch, replicas: int) -> bool:
    leaders = leader_uids_by_group(watch)
    assert sorted(leaders) == list(range(replicas)), f"groups seen {sorted(leaders)}"
    for group, uids in leaders.items():
        history = [
            (
                p["metadata"]["uid"][:8],
                labels(p).get(c.LABEL_TEMPLATE_REVISION_HASH),
                p["metadata"]["creationTimestamp"],
            )
            for p in watch.added
            if is_leader(p) and group_of(p) == group
        ]
        assert len(uids) == 2, (
            f"group {group} recreated {len(uids) - 1} times: leaders (uid, revision, created) {history}"
        )
    return True


async def recreation_evidence(api: KubeClient, ns: str) -> str:
    """Who replaced a leader: the pod controller (RecreateGroup events) or the StatefulSet
    controller (one leader StatefulSet revision per template it rolled out)?"""
    recreate = [e.get("note") for e in await events_with(api, ns, "RecreateGroup")]
    sts_revisions = [
        (r["metadata"]["name"], r["revision"])
        for r in await api.list(CONTROLLER_REVISIONS, ns)
        if any(
            o["kind"] == "StatefulSet" and o["name"] == NAME
            for o in r["metadata"].get("ownerReferences") or []
        )
    ]
    return f"RecreateGroup events: {recreate}; leader StatefulSet revisions: {sts_revisions}"


# ----- the journeys ------------------------------------------------------------------------------
async def test_deploy_four_groups_of_five(api: KubeClient, ns: str) -> None:
    lws = LeaderWorkerSetBuilder(ns).replicas(4).size(5).restart_policy(c.RESTART_POLICY_NONE).obj()
    for defaulted in ("rolloutStrategy", "networkConfig", "startupPolicy"):
        del lws["spec"][defaulted]
    created = await create(api, lws)

    # The defaulting webhook (and the CRD defaults) filled what the user left out.
    assert created["spec"]["rolloutStrategy"] == {
        "type": c.ROLLOUT_STRATEGY_ROLLING_UPDATE,
        "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
    }
    assert created["spec"]["networkConfig"] == {"subdomainPolicy": c.SUBDOMAIN_SHARED}
    assert created["spec"]["startupPolicy"] == c.STARTUP_POLICY_LEADER_CREATED
    assert created["spec"]["leaderWorkerTemplate"]["restartPolicy"] == c.RESTART_POLICY_NONE
    await expect_deployed(api, ns, replicas=4, size=5)
    await expect_valid_services(api, ns, 1)
    workers = [s for s in await api.list(STATEFULSETS, ns) if s["metadata"]["name"] != NAME]
    assert sorted(s["metadata"]["name"] for s in workers) == [f"{NAME}-{g}" for g in range(4)]
    for sts in workers:
        for key in (c.LABEL_SET_NAME, c.LABEL_GROUP_INDEX, c.LABEL_GROUP_KEY, c.LABEL_TEMPLATE_REVISION_HASH):
            assert labels(sts).get(key), f"{sts['metadata']['name']} has no {key}"
    await expect_lws_owned_revisions(api, ns, 1)

    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    assert lws["status"]["observedGeneration"] == lws["metadata"]["generation"]
    assert lws["status"]["hpaPodSelector"] == f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_WORKER_INDEX}=0"
    key = await leader_statefulset_revision_key(api, ns)
    await expect_event(
        api, ns, "CreatingRevision", f"Creating revision with key {key} for a newly created LeaderWorkerSet"
    )
    await expect_event(api, ns, c.REASON_GROUPS_PROGRESSING, f"Created leader statefulset {NAME}")
    for group in range(4):
        await expect_event(
            api, ns, c.REASON_GROUPS_PROGRESSING, f"Created worker statefulset for leader pod {NAME}-{group}"
        )
    await expect_event(
        api, ns, c.REASON_ALL_GROUPS_READY, "All replicas are ready, with 4 groups ready of total 4 groups"
    )


async def test_rolling_update_with_max_surge_grows_the_leader_statefulset_to_seven(
    api: KubeClient, ns: str
) -> None:
    await create(api, LeaderWorkerSetBuilder(ns).replicas(4).max_surge(4).obj())
    await expect_deployed(api, ns, replicas=4, size=2)
    old_key = await leader_statefulset_revision_key(api, ns)

    replicas_seen: list[int] = []

    def record(sets: dict[str, Obj]) -> None:
        if NAME in sets:
            replicas_seen.append(sets[NAME]["spec"]["replicas"])

    async with Watch(api, STATEFULSETS, ns, record):
        await update_worker_image(api, ns)
        await eventually(lambda: max(replicas_seen) == 7, message=f"leader replicas seen {replicas_seen}")
        await expect_deployed(api, ns, replicas=4, size=2)

    # upstream caps the surge at replicas - 1 (the last group is updated in place): 4 + 3.
    assert max(replicas_seen) == 7, replicas_seen
    assert replicas_seen[-1] == 4
    new_key = await leader_statefulset_revision_key(api, ns)
    assert new_key != old_key
    await expect_lws_owned_revisions(api, ns, 1)  # the old revision is truncated once the update is done
    await expect_event(api, ns, "CreatingRevision", f"Creating revision with key {new_key} for updated LWS")
    notes = [e.get("note", "") for e in await events_with(api, ns, c.REASON_GROUPS_PROGRESSING)]
    assert any(
        note.startswith(f"deleting surge replica {NAME}-")
        or note.startswith(f"deleting surge replicas from {NAME}-")
        for note in notes
    ), notes


async def test_rolling_update_with_max_unavailable_zero_keeps_every_group_ready(
    api: KubeClient, ns: str
) -> None:
    replicas, size = 4, 2
    await create(
        api, LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).max_surge(1).max_unavailable(0).obj()
    )
    await expect_deployed(api, ns, replicas, size)

    ready_seen: list[int] = []
    states_seen: list[dict[int, str]] = []
    leader_replicas: list[int] = []

    def record(pods: dict[str, Obj]) -> None:
        states_seen.append(group_states(list(pods.values()), size))
        ready_seen.append(ready_groups(list(pods.values()), size))

    async with (
        Watch(api, PODS, ns, record),
        Watch(api, STATEFULSETS, ns, lambda sets: leader_replicas.append(sets[NAME]["spec"]["replicas"])),
    ):
        await update_worker_image(api, ns)
        await eventually(
            lambda: max(leader_replicas) == replicas + 1, message=f"leader replicas {leader_replicas}"
        )
        await expect_deployed(api, ns, replicas, size)

    low = ready_seen.index(min(ready_seen))
    around = states_seen[max(0, low - 6) : low + 2]
    if min(ready_seen) < replicas:
        evidence = await recreation_evidence(api, ns)
        raise AssertionError(f"ready groups dropped to {min(ready_seen)}; group states {around}; {evidence}")
    assert max(leader_replicas) == replicas + 1


async def test_foreground_delete_removes_everything(api: KubeClient, ns: str) -> None:
    await create(api, LeaderWorkerSetBuilder(ns).replicas(2).size(3).obj())
    await expect_deployed(api, ns, replicas=2, size=3)

    await api.delete(LEADERWORKERSETS, ns, NAME, propagation="Foreground")

    async def lws_gone() -> bool:
        return await api.get_or_none(LEADERWORKERSETS, ns, NAME) is None

    await eventually(lws_gone, timeout=LONG_TIMEOUT)
    for ref in (STATEFULSETS, PODS, SERVICES, CONTROLLER_REVISIONS):
        await expect_gone(api, ns, ref)


async def test_a_deleted_or_restarted_pod_recreates_its_group_once(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    """RecreateGroupOnPodRestart (the default): a worker pod deleted, or a container restarted by
    the kubelet, makes the whole group start over once; the other groups keep their pods."""
    replicas, size = 3, 3
    await create(api, LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).obj())
    await expect_deployed(api, ns, replicas, size)

    async with Watch(api, PODS, ns, lambda _: None) as watch:
        await api.delete(PODS, ns, f"{NAME}-0-1")
        # The StatefulSet controller may recreate the deleted pod before the group is torn down.
        await expect_group_recreated_once(api, ns, watch, 0, replicas, size, spared=f"{NAME}-0-1")
    await expect_event(
        api,
        ns,
        "RecreateGroup",
        f"Worker pod {NAME}-0-1 failed, deleted leader pod {NAME}-0 to recreate group 0",
    )

    async with Watch(api, PODS, ns, lambda _: None) as watch:
        rest = RestClient.from_kubeconfig(full_cluster.kubeconfig)
        await asyncio.to_thread(chaos.restart_container, rest, ns, f"{NAME}-2-2")
        await expect_group_recreated_once(api, ns, watch, 2, replicas, size)
    await expect_event(
        api,
        ns,
        "RecreateGroup",
        f"Worker pod {NAME}-2-2 failed, deleted leader pod {NAME}-2 to recreate group 2",
    )


async def expect_group_recreated_once(
    api: KubeClient, ns: str, watch: Watch, group: int, replicas: int, size: int, spared: str = ""
) -> None:
    """Every pod of ``group`` got exactly one new UID (``spared``: at least one); no other pod changed."""
    before: dict[str, str] = {}
    for pod in watch.added:
        before.setdefault(pod["metadata"]["name"], uid(pod))

    def uids_seen() -> dict[str, set[str]]:
        seen: dict[str, set[str]] = defaultdict(set)
        for pod in watch.added:
            seen[pod["metadata"]["name"]].add(uid(pod))
        return seen

    async def recreated() -> bool:
        now = {name: uid(pod) for name, pod in (await pods_by_name(api, ns)).items()}
        assert set(now) == set(before), f"pods {sorted(now)}"
        for name, pod_uid in now.items():
            assert (pod_uid != before[name]) == (ordinals(name)[0] == group), (
                f"{name} replaced: {pod_uid != before[name]}"
            )
        return True

    await eventually(recreated, timeout=LONG_TIMEOUT)
    await expect_deployed(api, ns, replicas, size)
    await consistently(
        lambda: all(len(uids) == 1 for name, uids in uids_seen().items() if ordinals(name)[0] != group)
    )
    for name, uids in uids_seen().items():
        if ordinals(name)[0] != group:
            continue
        if name == spared:
            assert len(uids) >= 2, f"{name}: {len(uids)} incarnations"
        else:
            assert len(uids) == 2, f"{name} replaced {len(uids) - 1} times"


async def test_kubectl_scale_changes_the_number_of_groups(
    api: KubeClient, ns: str, full_cluster: LocalCluster
) -> None:
    await create(api, LeaderWorkerSetBuilder(ns).replicas(2).size(2).obj())
    await expect_deployed(api, ns, replicas=2, size=2)

    await kubectl(full_cluster, "-n", ns, "scale", f"lws/{NAME}", "--replicas=5")
    await expect_deployed(api, ns, replicas=5, size=2)

    await kubectl(full_cluster, "-n", ns, "scale", f"lws/{NAME}", "--replicas=1")
    await expect_deployed(api, ns, replicas=1, size=2)

    async def one_worker_statefulset() -> bool:
        names = sorted(s["metadata"]["name"] for s in await api.list(STATEFULSETS, ns))
        assert names == [NAME, f"{NAME}-0"], names
        return True

    await eventually(one_worker_statefulset)
    scale = json.loads(await kubectl(full_cluster, "-n", ns, "get", f"lws/{NAME}", "-o", "json"))
    assert scale["spec"]["replicas"] == 1


async def test_leader_ready_startup_creates_workers_only_after_the_leader_is_ready(
    api: KubeClient, ns: str
) -> None:
    """kwok makes every bound pod Ready at once, so the leaders are held Pending with a scheduling
    gate: LeaderCreated starts its workers anyway; LeaderReady waits until the gate is lifted and the
    leader is Ready."""
    hold = [{"name": "e2e.leaderworkerset.sigs.k8s.io/hold"}]

    def gated(name: str, policy: str) -> Obj:
        lws = LeaderWorkerSetBuilder(ns, name).replicas(1).size(3).startup_policy(policy).obj()
        lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["schedulingGates"] = hold
        return lws

    async def leader_pending(name: str) -> bool:
        leader = await api.get_or_none(PODS, ns, f"{name}-0")
        assert leader is not None, f"no leader pod {name}-0 yet"
        assert leader["status"].get("phase") == "Pending"
        assert not is_ready(leader)
        return True

    # "created" goes second, after ready-0 exists: its workers appearing is the positive sign that the
    # pod controller (one FIFO queue) has got past ready-0, so the negative below cannot hold merely
    # because ready-0 was not looked at yet.
    await create(api, gated("ready", c.STARTUP_POLICY_LEADER_READY))
    await eventually(lambda: leader_pending("ready"))
    await create(api, gated("created", c.STARTUP_POLICY_LEADER_CREATED))
    await eventually(lambda: leader_pending("created"))
    await expect_valid_worker_statefulsets(api, ns, name="created")

    async def only_the_leader_statefulset() -> bool:
        sets = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}=ready")
        assert [s["metadata"]["name"] for s in sets] == ["ready"]
        return True

    await consistently(only_the_leader_statefulset)

    await api.json_patch(PODS, ns, "ready-0", [{"op": "remove", "path": "/spec/schedulingGates"}])
    await expect_valid_worker_statefulsets(api, ns, name="ready")
    await expect_groups_available(api, ns, 1, name="ready")
    leader = await api.get(PODS, ns, "ready-0")
    ready_at = next(cond for cond in leader["status"]["conditions"] if cond["type"] == "Ready")
    workers = await api.get(STATEFULSETS, ns, "ready-0")
    # RFC 3339 UTC timestamps with second precision compare as strings.
    assert workers["metadata"]["creationTimestamp"] >= ready_at["lastTransitionTime"]


async def test_unique_per_replica_subdomains_include_surge_groups(api: KubeClient, ns: str) -> None:
    lws = (
        LeaderWorkerSetBuilder(ns)
        .replicas(4)
        .max_surge(4)
        .subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA)
        .obj()
    )
    await create(api, lws)
    await expect_deployed(api, ns, replicas=4, size=2)
    await expect_valid_services(api, ns, 4)

    services_seen: list[set[str]] = []
    leader_replicas: list[int] = []
    async with (
        Watch(api, SERVICES, ns, lambda services: services_seen.append(set(services))),
        Watch(api, STATEFULSETS, ns, lambda sets: leader_replicas.append(sets[NAME]["spec"]["replicas"])),
    ):
        await update_worker_image(api, ns)
        await eventually(lambda: max(leader_replicas) == 7, message=f"leader replicas {leader_replicas}")
        await eventually(
            lambda: {f"{NAME}-{g}" for g in range(7)} in services_seen,
            message="no moment with one Service per group, surge groups included",
        )
        await expect_deployed(api, ns, replicas=4, size=2)

    await expect_valid_services(api, ns, 4)


async def test_manager_killed_mid_rollout_resumes_without_restarting_groups_twice(
    api: KubeClient, ns: str, restartable_manager: ManagerProcess
) -> None:
    replicas, size = 4, 3
    await create(api, LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).obj())
    await expect_deployed(api, ns, replicas, size)
    await expect_lws_owned_revisions(api, ns, 1)
    old_key = await leader_statefulset_revision_key(api, ns)

    async with (
        Watch(api, PODS, ns, lambda _: None) as pods,
        Watch(api, CONTROLLER_REVISIONS, ns, lambda _: None) as revisions,
    ):
        await update_worker_image(api, ns)

        def rollout_started() -> bool:
            return any(
                is_leader(p) and labels(p).get(c.LABEL_TEMPLATE_REVISION_HASH) != old_key for p in pods.added
            )

        await eventually(rollout_started, interval=0.01)
        restartable_manager.kill()
        status = (await api.get(LEADERWORKERSETS, ns, NAME))["status"]
        assert status.get("updatedReplicas", 0) < replicas, (
            "the rollout finished before the manager was killed"
        )

        await restartable_manager.start()
        await expect_deployed(api, ns, replicas, size)
        try:
            await consistently(lambda: expect_each_group_recreated_once(pods, replicas))
        except AssertionError as err:
            raise AssertionError(f"{err}\n{await recreation_evidence(api, ns)}") from None
    lws_owned = [
        r
        for r in revisions.added
        if any(o["kind"] == c.LWS_KIND for o in r["metadata"].get("ownerReferences") or [])
    ]
    assert len(lws_owned) == 2, (
        f"LWS revisions created: {[r['metadata']['name'] for r in lws_owned]}"
    )  # old + new
    await expect_lws_owned_revisions(api, ns, 1)
