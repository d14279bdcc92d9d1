"""Gang scheduling with groupIdentity Hash, both providers, against the real API server
(docs/gang-scheduling.md).

A Hash group is named by a key the pod webhook draws for each leader, so the LWS controller cannot
enumerate its PodGroups: it makes the Workload (kubernetes provider) before the leader Deployment,
and the pod controller makes each group's PodGroup(s) from the admitted leader while the
group-replacement gate still holds it. The tests play the ReplicaSet controller (pods from the
Deployment's template, workers from the worker StatefulSet's), run every pod through the real
pod-webhook mutation (`default_pod` with the provider's injector), and play garbage collection
(the apiserver shape has no controller-manager) by deleting a replaced group's pods.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling.kubernetes import POD_GROUPS, WORKLOADS
from leaderworkerset.controllers.scheduling.volcano import VOLCANO_POD_GROUPS
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DEPLOYMENTS, LEADERWORKERSETS, PODS, STATEFULSETS, ResourceRef
from leaderworkerset.webhooks.pod import (
    PodGroupInjector,
    default_pod,
    volcano_pod_group_injector,
    workload_pod_group_injector,
)
from tests.integration.scheduling.test_kubernetes import _condition, _refs, _workload
from tests.support import kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
Obj = dict[str, Any]


def _hash_lws(ns: str, replicas: int, size: int, scheduling: Obj | None) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns)
        .replicas(replicas)
        .size(size)
        .defaulted()
        .group_identity(c.GROUP_IDENTITY_HASH)
    )
    if scheduling is not None:
        builder.scheduling(scheduling)
    return builder.obj()


async def _get(api: KubeClient, ref: ResourceRef, ns: str, name: str) -> Obj:
    async def fetch() -> Obj:
        try:
            return await api.get(ref, ns, name)
        except Exception as err:
            raise AssertionError(f"{ref.kind} {name}: {err}") from err

    result: Obj = await eventually(fetch)
    return result


def _pod(template: Obj, ns: str, name: str) -> Obj:
    template = copy.deepcopy(template)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": template["metadata"].get("labels") or {},
            "annotations": template["metadata"].get("annotations") or {},
        },
        "spec": template["spec"],
    }


async def _new_leader(api: KubeClient, ns: str, inject: PodGroupInjector) -> Obj:
    """A leader as the ReplicaSet makes it from the Deployment template, through the pod webhook."""
    deploy = await _get(api, DEPLOYMENTS, ns, NAME)
    pod = _pod(deploy["spec"]["template"], ns, f"{NAME}-{secrets.token_hex(4)}")
    return await api.create(PODS, default_pod(pod, pod_group_injector=inject))


async def _workers(api: KubeClient, leader: Obj, inject: PodGroupInjector) -> list[Obj]:
    """The group's workers from the worker StatefulSet's template, through the pod webhook."""
    ns, name = leader["metadata"]["namespace"], leader["metadata"]["name"]
    sts = await _get(api, STATEFULSETS, ns, name)
    return [
        await api.create(
            PODS, default_pod(_pod(sts["spec"]["template"], ns, f"{name}-{j}"), pod_group_injector=inject)
        )
        for j in range(1, int(sts["spec"]["replicas"]) + 1)
    ]


def _key(pod: Obj) -> str:
    return str(pod["metadata"]["labels"][c.LABEL_GROUP_INDEX])


async def _admitted(api: KubeClient, leader: Obj) -> None:
    async def check() -> bool:
        pod = await api.get(PODS, leader["metadata"]["namespace"], leader["metadata"]["name"])
        gates = [g["name"] for g in pod["spec"].get("schedulingGates") or []]
        assert c.SCHEDULING_GATE_GROUP_REPLACEMENT not in gates, gates
        return True

    await eventually(check)


async def _live_groups(api: KubeClient, ref: ResourceRef, ns: str, want: set[str]) -> dict[str, Obj]:
    """The PodGroups not being deleted, once their names are exactly `want` (a deleted Workload API
    PodGroup stays terminating behind its protection finalizer: no controller-manager here)."""

    async def check() -> tuple[dict[str, Obj]]:
        live = {
            g["metadata"]["name"]: g
            for g in await api.list(ref, ns)
            if not g["metadata"].get("deletionTimestamp")
        }
        assert set(live) == want, sorted(live)
        return (live,)  # truthy even when empty

    (result,) = await eventually(check)
    return result


async def _delete_group(api: KubeClient, leader: Obj) -> None:
    """The group goes: its leader, then (garbage collection's part) its workers."""
    ns = leader["metadata"]["namespace"]
    for pod in await api.list(PODS, ns, label_selector=f"{c.LABEL_GROUP_INDEX}={_key(leader)}"):
        await api.delete(PODS, ns, pod["metadata"]["name"], grace_period_seconds=0)


# ----- the kubernetes provider (Workload API) ------------------------------------------------------------


async def test_hash_replica_groups_get_pod_groups_per_group_key_and_lose_them_when_they_go(
    gang_api: KubeClient, workload_ns: str
) -> None:
    await gang_api.create(LEADERWORKERSETS, _hash_lws(workload_ns, 2, 2, {}))
    lws = await kubelet.get_lws(gang_api, workload_ns)
    workload = await _workload(gang_api, lws)
    workload_name = workload["metadata"]["name"]
    await _condition(gang_api, workload_ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)
    deploy = await _get(gang_api, DEPLOYMENTS, workload_ns, NAME)
    template_annotations = deploy["spec"]["template"]["metadata"]["annotations"]
    assert template_annotations[c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING] == c.SCHEDULING_MODE_REPLICA
    assert template_annotations[c.ANNOTATION_WORKLOAD_NAME] == workload_name
    revision = deploy["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    # Nothing enumerated by index: the prerequisites are done and no PodGroup exists yet.
    await _live_groups(gang_api, POD_GROUPS, workload_ns, set())

    def name_of(leader: Obj) -> str:
        return wl.runtime_name(workload_name, _key(leader), revision)

    first, second = [await _new_leader(gang_api, workload_ns, workload_pod_group_injector) for _ in range(2)]
    groups = await _live_groups(gang_api, POD_GROUPS, workload_ns, {name_of(first), name_of(second)})
    for leader in (first, second):
        assert leader["spec"]["schedulingGroup"] == {"podGroupName": name_of(leader)}
        group = groups[name_of(leader)]
        assert group["metadata"]["labels"] == {
            c.LABEL_SET_NAME: NAME,
            c.LABEL_SCHEDULING_LEVEL: c.SCHEDULING_MODE_REPLICA,
            c.LABEL_GROUP_INDEX: _key(leader),
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        }
        assert group["spec"]["workloadRef"] == {"workloadName": workload_name, "templateName": "replica"}
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
        # The LWS's (never the leader pod's), and the Workload's.
        assert _refs(group) == [(c.LWS_KIND, NAME, True), ("Workload", workload_name, False)]
        await _admitted(gang_api, leader)  # the gate is lifted once the PodGroup exists
    [worker] = await _workers(gang_api, first, workload_pod_group_injector)
    assert worker["spec"]["schedulingGroup"] == {"podGroupName": name_of(first)}
    assert worker["metadata"]["annotations"][c.ANNOTATION_GROUP_IDENTITY] == c.GROUP_IDENTITY_HASH

    # Replacement: the first group fails and goes; its successor has a new key and a new PodGroup,
    # and the old PodGroup goes once no pod names it (its last pod being a worker).
    await _delete_group(gang_api, first)
    replacement = await _new_leader(gang_api, workload_ns, workload_pod_group_injector)
    assert _key(replacement) not in (_key(first), _key(second))
    await _live_groups(gang_api, POD_GROUPS, workload_ns, {name_of(second), name_of(replacement)})
    await _admitted(gang_api, replacement)

    # Scale-down: the ReplicaSet removes a leader; that group's PodGroup follows it; the Workload stays.
    await kubelet.update_lws(gang_api, workload_ns, NAME, lambda obj: obj["spec"].update(replicas=1))

    async def scaled() -> bool:
        replicas = (await gang_api.get(DEPLOYMENTS, workload_ns, NAME))["spec"]["replicas"]
        assert replicas == 1, replicas
        return True

    await eventually(scaled)
    await _delete_group(gang_api, second)
    await _live_groups(gang_api, POD_GROUPS, workload_ns, {name_of(replacement)})
    await gang_api.get(WORKLOADS, workload_ns, workload_name)


async def test_hash_role_groups_get_a_leader_and_a_worker_pod_group(
    gang_api: KubeClient, workload_ns: str
) -> None:
    scheduling = {"replica": {"worker": {"schedulingPolicy": {"gang": {}}}}}
    await gang_api.create(LEADERWORKERSETS, _hash_lws(workload_ns, 1, 3, scheduling))
    workload_name = (await _workload(gang_api, await kubelet.get_lws(gang_api, workload_ns)))["metadata"][
        "name"
    ]
    await _condition(gang_api, workload_ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)
    leader = await _new_leader(gang_api, workload_ns, workload_pod_group_injector)
    revision = leader["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    names = {
        role: wl.runtime_name(workload_name, _key(leader), role, revision)
        for role in (c.ROLE_LEADER, c.ROLE_WORKER)
    }
    groups = await _live_groups(gang_api, POD_GROUPS, workload_ns, set(names.values()))
    assert groups[names[c.ROLE_LEADER]]["spec"]["schedulingPolicy"] == {"basic": {}}
    assert groups[names[c.ROLE_WORKER]]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert leader["spec"]["schedulingGroup"] == {"podGroupName": names[c.ROLE_LEADER]}
    await _admitted(gang_api, leader)
    workers = await _workers(gang_api, leader, workload_pod_group_injector)
    assert [w["spec"]["schedulingGroup"] for w in workers] == [{"podGroupName": names[c.ROLE_WORKER]}] * 2


# ----- Volcano ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheduling",
    [
        pytest.param({}, id="typed API (spec.scheduling)"),
        pytest.param(None, id="legacy (no spec.scheduling)"),
    ],
)
async def test_volcano_hash_groups_get_a_pod_group_per_group_key_owned_by_the_leader(
    gang_api: KubeClient, volcano_ns: str, scheduling: Obj | None
) -> None:
    await gang_api.create(LEADERWORKERSETS, _hash_lws(volcano_ns, 2, 3, scheduling))
    if scheduling is not None:
        # The typed path's prerequisites ran (and enumerated nothing) before any leader exists.
        await _condition(gang_api, volcano_ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)
    await _live_groups(gang_api, VOLCANO_POD_GROUPS, volcano_ns, set())
    leaders = [await _new_leader(gang_api, volcano_ns, volcano_pod_group_injector) for _ in range(2)]
    revision = leaders[0]["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]

    def name_of(leader: Obj) -> str:
        return f"{NAME}-{_key(leader)}-{revision}"

    groups = await _live_groups(gang_api, VOLCANO_POD_GROUPS, volcano_ns, {name_of(p) for p in leaders})
    for leader in leaders:
        assert leader["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] == name_of(leader)
        group = groups[name_of(leader)]
        assert group["metadata"]["labels"] == {
            c.LABEL_SET_NAME: NAME,
            c.LABEL_GROUP_INDEX: _key(leader),
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        }
        # Controlled by the leader pod: a replaced or scaled-down group takes its PodGroup along.
        assert group["metadata"]["ownerReferences"] == [kubelet.owner_reference(leader, "v1", "Pod")]
        assert group["spec"]["minMember"] == 3
        await _admitted(gang_api, leader)
    workers = await _workers(gang_api, leaders[0], volcano_pod_group_injector)
    assert [w["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] for w in workers] == [
        name_of(leaders[0])
    ] * 2

    # A replacement group gets its own PodGroup under its new key.
    await _delete_group(gang_api, leaders[0])
    replacement = await _new_leader(gang_api, volcano_ns, volcano_pod_group_injector)
    await _admitted(gang_api, replacement)
    group = await _get(gang_api, VOLCANO_POD_GROUPS, volcano_ns, name_of(replacement))
    assert group["metadata"]["ownerReferences"] == [kubelet.owner_reference(replacement, "v1", "Pod")]
