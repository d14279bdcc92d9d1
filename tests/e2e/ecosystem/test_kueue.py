"""Kueue v0.17.0 admitting LeaderWorkerSet groups, on the full local cluster (tests/support/kueue.py).

Kueue's LeaderWorkerSet integration, as read in its `pkg/controller/jobs/leaderworkerset`: its LWS
webhook marks the pod templates of a set that names a LocalQueue (`kueue.x-k8s.io/queue-name`), so
that its pod webhook gates every pod of the set at creation (`kueue.x-k8s.io/admission`); its LWS
reconciler keeps one Workload per group index below `spec.replicas` (named from the set's name, UID
and the group index), and its pod reconciler ties each pod to its group's Workload by the pod's
`group-index` label. A group's pods are ungated when its Workload is admitted within the
ClusterQueue's quota. So Kueue depends on our labels, our StatefulSet shapes and our pod templates;
these tests keep that working.

Each pod here requests 100m CPU and each group has 2 pods, so a group takes 200m of quota.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, NAMESPACES, STATEFULSETS
from tests.e2e.ecosystem.conftest import OURS, UPSTREAM, Controllers
from tests.support import kueue
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.builders.disaggregatedset import DisaggregatedSetBuilder
from tests.support.expect import expect_ds_available, expect_groups_available
from tests.support.lwsapi import NEW_IMAGE, create, update_worker_image
from tests.support.objects import is_ready
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
POD_CPU = "100m"
GROUP = 200  # millicores of one group of 2 pods


def cpu(groups: int) -> str:
    return f"{groups * GROUP}m"


async def queue(api: KubeClient, ns: str, groups: int) -> str:
    """A ClusterQueue with room for `groups` groups and a LocalQueue for it in `ns`; its name."""
    await api.apply(kueue.RESOURCE_FLAVORS, kueue.resource_flavor())
    await api.create(kueue.CLUSTER_QUEUES, kueue.cluster_queue(f"cq-{ns}", cpu(groups)))
    await api.create(kueue.LOCAL_QUEUES, kueue.local_queue(ns, "lq", f"cq-{ns}"))
    await kueue.queues_active(api, ns, "lq", f"cq-{ns}")
    return "lq"


async def resize_queue(api: KubeClient, ns: str, groups: int) -> None:
    cq = kueue.cluster_queue(f"cq-{ns}", cpu(groups))
    await api.merge_patch(kueue.CLUSTER_QUEUES, None, f"cq-{ns}", {"spec": cq["spec"]})


def queued(ns: str, name: str, replicas: int, *, local_queue: str = "lq") -> LeaderWorkerSetBuilder:
    return (
        LeaderWorkerSetBuilder(ns, name)
        .replicas(replicas)
        .size(2)
        .label(kueue.QUEUE_LABEL, local_queue)
        .leader_resources({"cpu": POD_CPU})
        .worker_resources({"cpu": POD_CPU})
    )


async def uid_of(api: KubeClient, ns: str, name: str) -> str:
    return str((await api.get(LEADERWORKERSETS, ns, name))["metadata"]["uid"])


async def expect_admissions(api: KubeClient, ns: str, name: str, *, groups: int, admitted: int) -> set[str]:
    """Kueue holds exactly one Workload per group (named as Kueue names them), `admitted` of them
    admitted; a group's pods are gated exactly when its Workload is not, and every pod of an
    admitted group is Ready. Returns the indexes of the groups left waiting."""
    uid = await uid_of(api, ns, name)
    expected = {kueue.workload_name(name, uid, str(i)): str(i) for i in range(groups)}

    async def check() -> set[str]:
        workloads = await kueue.workloads_of(api, ns, uid)
        assert set(workloads) == set(expected), f"workloads {sorted(workloads)} != {sorted(expected)}"
        waiting = {expected[w.name] for w in workloads.values() if not w.admitted}
        assert groups - len(waiting) == admitted, (
            f"admitted {groups - len(waiting)} != {admitted}: {workloads}"
        )
        pods = await kueue.pods_of(api, ns, name)
        assert len(pods) == 2 * groups, f"{len(pods)} pods for {groups} groups"
        assert kueue.gated_groups(pods) == waiting, f"gated {kueue.gated_groups(pods)}, waiting {waiting}"
        for pod in pods:
            group = pod["metadata"]["labels"][c.LABEL_GROUP_INDEX]
            workload = kueue.workload_name(name, uid, group)
            assert pod["metadata"]["labels"].get(kueue.POD_GROUP_LABEL) == workload, pod["metadata"]["labels"]
            assert group in waiting or is_ready(pod), (
                f"{pod['metadata']['name']} of an admitted group not Ready"
            )
        return waiting or {"none"}

    waiting = await eventually(check, timeout=LONG_TIMEOUT)
    return waiting - {"none"}


async def expect_no_workloads_left(api: KubeClient, ns: str, uid: str) -> None:
    async def gone() -> bool:
        left = await api.list(kueue.WORKLOADS, ns, label_selector=f"{kueue.JOB_UID_LABEL}={uid}")
        assert not left, f"workloads left: {[w['metadata']['name'] for w in left]}"
        return True

    await eventually(gone, timeout=LONG_TIMEOUT)


async def scale(api: KubeClient, ns: str, name: str, replicas: int) -> None:
    await api.merge_patch(LEADERWORKERSETS, ns, name, {"spec": {"replicas": replicas}})


async def fail_and_await_recreation(
    api: KubeClient, cluster: LocalCluster, ns: str, name: str, group: int, *, restart: bool = False
) -> None:
    """Fail a worker of `group` as a kubelet would report it (the pod Failed, or with `restart` a
    container restarted); RecreateGroupOnPodRestart replaces the whole group (a new leader UID).

    Upstream's v0.9.0 controller acts on a restarted container or a pod it sees terminating; a
    Failed pod it only catches if it sees the StatefulSet controller's deletion before the pod is
    gone, which the local cluster's immediate pod reaper makes a matter of timing. Hence `restart`
    where upstream's controller runs."""
    pods = {p["metadata"]["name"]: p for p in await kueue.pods_of(api, ns, name)}
    leader_uid = pods[f"{name}-{group}"]["metadata"]["uid"]
    client = RestClient.from_kubeconfig(cluster.kubeconfig)
    act = chaos.restart_container if restart else chaos.fail_pod
    await asyncio.to_thread(act, client, ns, f"{name}-{group}-1")

    async def recreated() -> bool:
        now = {p["metadata"]["name"]: p for p in await kueue.pods_of(api, ns, name)}
        leader = now.get(f"{name}-{group}")
        assert leader is not None, "leader not recreated yet"
        assert leader["metadata"]["uid"] != leader_uid, "group not recreated yet"
        return True

    await eventually(recreated, timeout=LONG_TIMEOUT)


async def expect_status_ready(api: KubeClient, ns: str, name: str, ready: int) -> None:
    async def check() -> bool:
        status = (await api.get(LEADERWORKERSETS, ns, name)).get("status") or {}
        assert status.get("readyReplicas", 0) == ready, (
            f"readyReplicas {status.get('readyReplicas')} != {ready}"
        )
        return True

    await eventually(check, timeout=LONG_TIMEOUT)


async def expect_gated(api: KubeClient, ns: str, name: str, groups: set[str]) -> bool:
    gated = kueue.gated_groups(await kueue.pods_of(api, ns, name))
    assert gated == groups, f"gated groups {gated} != {groups}"
    return True


# ----- ours --------------------------------------------------------------------------------------
async def test_groups_beyond_quota_wait_gated_until_quota_frees(
    ours: Controllers, kueue_api: KubeClient, kueue_ns: str
) -> None:
    """Room for 3 groups, 1 taken by another set: of a 3-group set, 2 groups are admitted and
    Available, the third waits with its pods gated; it is admitted once the other set is gone (and
    with it, its Workload)."""
    api, ns = kueue_api, kueue_ns
    lq = await queue(api, ns, groups=3)
    await create(api, queued(ns, "blocker", 1, local_queue=lq).obj())
    await expect_groups_available(api, ns, 1, name="blocker")
    blocker_uid = await uid_of(api, ns, "blocker")

    await create(api, queued(ns, "served", 3, local_queue=lq).obj())
    waiting = await expect_admissions(api, ns, "served", groups=3, admitted=2)
    assert len(waiting) == 1
    await expect_status_ready(api, ns, "served", 2)
    # Held: the waiting group stays gated while the blocker holds its quota.
    await consistently(lambda: expect_gated(api, ns, "served", waiting))

    await api.delete(LEADERWORKERSETS, ns, "blocker")
    await expect_no_workloads_left(api, ns, blocker_uid)
    await expect_admissions(api, ns, "served", groups=3, admitted=3)
    await expect_groups_available(api, ns, 3, name="served")


async def test_scaling_rollout_and_group_recreation_leave_no_group_gated(
    ours: Controllers, kueue_api: KubeClient, kueue_ns: str, kueue_cluster: LocalCluster
) -> None:
    """2 groups scaled to 3, rolled to a new image, group 1 recreated after a worker failed, scaled
    down to 1, deleted: after each step every group is admitted and Ready, no pod is left gated and
    the Workloads are exactly one per group (none leaked by the scale-down or the deletion)."""
    api, ns, name = kueue_api, kueue_ns, "life"
    lq = await queue(api, ns, groups=3)
    await create(api, queued(ns, name, 2, local_queue=lq).obj())
    await expect_admissions(api, ns, name, groups=2, admitted=2)
    await expect_groups_available(api, ns, 2, name=name)
    uid = await uid_of(api, ns, name)

    await scale(api, ns, name, 3)
    await expect_admissions(api, ns, name, groups=3, admitted=3)
    await expect_groups_available(api, ns, 3, name=name)

    await update_worker_image(api, ns, name=name)
    await expect_groups_available(api, ns, 3, name=name)
    await expect_admissions(api, ns, name, groups=3, admitted=3)
    workers = [
        p for p in await kueue.pods_of(api, ns, name) if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] != "0"
    ]
    assert {p["spec"]["containers"][0]["image"] for p in workers} == {NEW_IMAGE}

    await fail_and_await_recreation(api, kueue_cluster, ns, name, group=1)
    await expect_groups_available(api, ns, 3, name=name)
    await expect_admissions(api, ns, name, groups=3, admitted=3)

    await scale(api, ns, name, 1)
    await expect_admissions(api, ns, name, groups=1, admitted=1)
    await expect_groups_available(api, ns, 1, name=name)

    await api.delete(LEADERWORKERSETS, ns, name)
    await expect_no_workloads_left(api, ns, uid)


async def test_higher_priority_set_preempts_a_lower_one_group_by_group(
    ours: Controllers, kueue_api: KubeClient, kueue_ns: str
) -> None:
    """Room for 2 groups, both held by a low-priority set; a high-priority set of 1 group takes the
    room of exactly one low group (its pods come back gated), the other low group keeps running;
    when the high set goes, the low group is admitted again."""
    api, ns = kueue_api, kueue_ns
    lq = await queue(api, ns, groups=2)
    for level, value in (("low", 100), ("high", 1000)):
        await api.create(kueue.PRIORITY_CLASSES, kueue.priority_class(f"{level}-{ns}", value))
    await create(api, queued(ns, "low", 2, local_queue=lq).label(kueue.PRIORITY_LABEL, f"low-{ns}").obj())
    await expect_admissions(api, ns, "low", groups=2, admitted=2)
    await expect_groups_available(api, ns, 2, name="low")

    await create(api, queued(ns, "high", 1, local_queue=lq).label(kueue.PRIORITY_LABEL, f"high-{ns}").obj())
    await expect_admissions(api, ns, "high", groups=1, admitted=1)
    await expect_groups_available(api, ns, 1, name="high")
    # One low group gave way (its pods recreated gated); the other kept running.
    waiting = await expect_admissions(api, ns, "low", groups=2, admitted=1)
    assert len(waiting) == 1
    await expect_status_ready(api, ns, "low", 1)

    high_uid = await uid_of(api, ns, "high")
    await api.delete(LEADERWORKERSETS, ns, "high")
    await expect_no_workloads_left(api, ns, high_uid)
    await expect_admissions(api, ns, "low", groups=2, admitted=2)
    await expect_groups_available(api, ns, 2, name="low")


async def test_hash_identity_groups_stay_gated_under_kueue_v0_17(
    ours: Controllers, kueue_api: KubeClient, kueue_ns: str
) -> None:
    """A known limit of Kueue v0.17.0, not of ours: its LeaderWorkerSet integration predates Hash
    group identity (it is built on sigs.k8s.io/lws v0.8.0). It keeps Workloads for group indexes
    0..replicas-1, but a Hash group's `group-index` is its 40-hex key, so the Workload name Kueue
    derives for the pods (`leaderworkerset-<lws>-<key>-<hash>`) is longer than a label value may be:
    its pod reconciler cannot label them and no group is ever admitted. Upstream v1.0 labels Hash
    groups the same way, so it meets the same wall. Deleting the set leaves no Workload behind."""
    api, ns, name = kueue_api, kueue_ns, "hashed"
    lq = await queue(api, ns, groups=3)
    lws = queued(ns, name, 2, local_queue=lq).obj()
    lws["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    await create(api, lws)
    uid = await uid_of(api, ns, name)
    ordinal_names = {kueue.workload_name(name, uid, str(i)) for i in range(2)}

    async def settled() -> list[Obj]:
        workloads = await kueue.workloads_of(api, ns, uid)
        assert set(workloads) == ordinal_names, sorted(workloads)
        pods = await kueue.pods_of(api, ns, name)
        assert len(pods) == 4, f"{len(pods)} pods"
        return pods

    pods = await eventually(settled, timeout=LONG_TIMEOUT)
    for pod in pods:
        key = pod["metadata"]["labels"][c.LABEL_GROUP_INDEX]
        assert len(kueue.workload_name(name, uid, key)) > 63, key

    async def all_gated_and_unlabelled() -> bool:
        pods = await kueue.pods_of(api, ns, name)
        assert all(kueue.gated(p) for p in pods), "a Hash group was admitted"
        assert not any(kueue.POD_GROUP_LABEL in p["metadata"]["labels"] for p in pods)
        return True

    await consistently(all_gated_and_unlabelled)
    await api.delete(LEADERWORKERSETS, ns, name)
    await expect_no_workloads_left(api, ns, uid)


async def test_disaggregated_set_roles_are_queued_through_role_metadata(
    ours: Controllers, kueue_api: KubeClient, kueue_ns: str
) -> None:
    """The queue label reaches a role's LeaderWorkerSet from `roles[].metadata.labels` (copied onto
    the child LWS); the DisaggregatedSet's own labels are not copied, so a role without it is not
    queued at all."""
    api, ns = kueue_api, kueue_ns
    lq = await queue(api, ns, groups=1)
    ds = (
        DisaggregatedSetBuilder(ns, "ds")
        .role("prefill", replicas=2, size=2)
        .role("decode", replicas=1, size=1)
        .role_metadata("prefill", {kueue.QUEUE_LABEL: lq}, {})
        .obj()
    )
    ds["metadata"]["labels"] = {kueue.QUEUE_LABEL: lq}
    for role in ds["spec"]["roles"]:
        container = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": POD_CPU}, "limits": {"cpu": POD_CPU}}
    await api.create(DISAGGREGATEDSETS, ds, ns)

    async def children() -> dict[str, Obj]:
        items = await api.list(LEADERWORKERSETS, ns, label_selector=f"{c.LABEL_DS_NAME}=ds")
        by_role = {lws["metadata"]["labels"][c.LABEL_DS_ROLE]: lws for lws in items}
        assert set(by_role) == {"prefill", "decode"}, sorted(by_role)
        return by_role

    lws = await eventually(children, timeout=LONG_TIMEOUT)
    prefill, decode = lws["prefill"]["metadata"], lws["decode"]["metadata"]
    assert prefill["labels"].get(kueue.QUEUE_LABEL) == lq
    assert kueue.QUEUE_LABEL not in decode["labels"]
    await expect_admissions(api, ns, prefill["name"], groups=2, admitted=1)
    await expect_groups_available(api, ns, 1, name=decode["name"])
    assert await kueue.workloads_of(api, ns, decode["uid"]) == {}

    await resize_queue(api, ns, groups=2)
    await expect_admissions(api, ns, prefill["name"], groups=2, admitted=2)
    await expect_ds_available(api, ns, {"prefill": 2, "decode": 1}, name="ds")


# ----- ours and upstream's side by side ----------------------------------------------------------
KUEUE_KEYS = kueue.GROUP + "/"


def _kueue_marks(meta: Obj, ns: str, name: str, uid: str, group: str) -> dict[str, str]:
    """Kueue's labels and annotations on an object, with its own Workload's name spelled `<own>`
    and the namespace (part of the ClusterQueue's name) `<ns>`."""
    own = kueue.workload_name(name, uid, group) if group else None
    marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    return {
        key: "<own>" if own is not None and value == own else value.replace(ns, "<ns>")
        for key, value in sorted(marks.items())
        if key.startswith(KUEUE_KEYS)
    }


def _pod_view(pod: Obj, ns: str, name: str, uid: str) -> tuple[Any, ...]:
    meta = pod["metadata"]
    return (
        meta["labels"][c.LABEL_WORKER_INDEX] == "0",
        kueue.gated(pod),
        tuple(_kueue_marks(meta, ns, name, uid, meta["labels"][c.LABEL_GROUP_INDEX]).items()),
        tuple(f for f in meta.get("finalizers") or [] if f.startswith(KUEUE_KEYS)),
    )


async def snapshot(api: KubeClient, ns: str, name: str, step: str) -> Obj:
    """What Kueue made of one set at a settled step, free of names and UIDs that differ per run:
    its Workloads (named as expected? admitted? pod sets), the marks Kueue put on the set's pod
    templates and on each pod, and how many groups wait gated."""
    lws = await api.get(LEADERWORKERSETS, ns, name)
    uid = lws["metadata"]["uid"]
    workloads = await kueue.workloads_of(api, ns, uid)
    pods = await kueue.pods_of(api, ns, name)
    template = lws["spec"]["leaderWorkerTemplate"]
    return {
        "step": step,
        "workloads": sorted(
            (w.name == kueue.workload_name(name, uid, w.group), w.admitted, w.cluster_queue != "", w.pod_sets)
            for w in workloads.values()
        ),
        "template marks": [
            _kueue_marks(template[t].get("metadata") or {}, ns, name, uid, "")
            for t in sorted(template)
            if t.endswith("Template")
        ],
        "pod marks": sorted(_pod_view(p, ns, name, uid) for p in pods),
        "gated groups": len(kueue.gated_groups(pods)),
    }


async def settled(api: KubeClient, ns: str, name: str, step: str, *, groups: int, admitted: int) -> Obj:
    """The snapshot once a step has settled: Kueue's admissions as expected, the admitted groups
    Ready, and no pod left of a removed group. When a scale-down removes a group, Kueue deletes the
    group's pods as its Workload goes while the garbage collector removes the worker StatefulSet;
    when Kueue is first, the StatefulSet recreates a worker (gated) for a moment. That race is
    Kueue's and the collector's, seen under either controller, so a step waits it out."""
    await expect_admissions(api, ns, name, groups=groups, admitted=admitted)
    if admitted == groups:
        await expect_groups_available(api, ns, groups, name=name)
    else:
        await expect_status_ready(api, ns, name, admitted)

    async def check() -> Obj:
        snap = await snapshot(api, ns, name, step)
        assert len(snap["pod marks"]) == 2 * groups, f"{len(snap['pod marks'])} pods"
        assert snap["gated groups"] == groups - admitted, f"{snap['gated groups']} groups gated"
        workers = await api.list(
            STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={name},{c.LABEL_GROUP_INDEX}"
        )
        assert len(workers) == groups, f"{len(workers)} worker statefulsets"
        return snap

    return await eventually(check, timeout=LONG_TIMEOUT)


async def journey(api: KubeClient, cluster: LocalCluster, ns: str) -> list[Obj]:
    """Quota holding a group back and freeing it, a scale down, a rolling update, a group
    recreation and a preemption by a set of higher priority, under whichever controller runs; a
    snapshot after each settled step."""
    name = "cmp"
    lq = await queue(api, ns, groups=2)
    await create(api, queued(ns, name, 3, local_queue=lq).obj())
    steps = [await settled(api, ns, name, "3 groups, room for 2", groups=3, admitted=2)]
    await resize_queue(api, ns, groups=3)
    steps.append(await settled(api, ns, name, "room for 3", groups=3, admitted=3))
    await scale(api, ns, name, 2)
    steps.append(await settled(api, ns, name, "scaled down to 2", groups=2, admitted=2))
    await update_worker_image(api, ns, name=name)
    steps.append(await settled(api, ns, name, "rolled out", groups=2, admitted=2))
    await fail_and_await_recreation(api, cluster, ns, name, group=0, restart=True)
    steps.append(await settled(api, ns, name, "group 0 recreated", groups=2, admitted=2))
    await resize_queue(api, ns, groups=2)  # no room left beside the 2 groups
    await api.create(kueue.PRIORITY_CLASSES, kueue.priority_class(f"urgent-{ns}", 1000))
    await create(
        api, queued(ns, "urgent", 1, local_queue=lq).label(kueue.PRIORITY_LABEL, f"urgent-{ns}").obj()
    )
    await expect_groups_available(api, ns, 1, name="urgent")
    steps.append(await settled(api, ns, name, "a group preempted", groups=2, admitted=1))
    await api.delete(LEADERWORKERSETS, ns, "urgent")
    steps.append(await settled(api, ns, name, "admitted again", groups=2, admitted=2))
    return steps


async def test_kueue_makes_the_same_workloads_and_admissions_as_under_upstream(
    kueue_env: Controllers, kueue_api: KubeClient, kueue_cluster: LocalCluster, kueue_ns: str
) -> None:
    """The journey under upstream's v0.9.0 controller, then under ours (each in its own namespace),
    gives the same Workloads, admissions, gating and Kueue marks at every step."""
    seen = {}
    for which in (UPSTREAM, OURS):
        await kueue_env.use(which)
        ns = f"{kueue_ns}-{'up' if which == UPSTREAM else 'ours'}"
        await kueue_api.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        seen[which] = await journey(kueue_api, kueue_cluster, ns)
    for upstream_step, our_step in zip(seen[UPSTREAM], seen[OURS], strict=True):
        assert our_step == upstream_step
