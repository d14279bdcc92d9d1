"""The kubernetes provider against an API server serving the Workload API.

The tests play the leader StatefulSet controller and the pod webhook (`workload_pod_group_injector`,
the function the real webhook runs); the controllers run in-process with `schedulerProvider:
kubernetes`, scoped to the test's namespace.
"""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling.kubernetes import POD_GROUPS, WORKLOADS
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS, ResourceRef
from leaderworkerset.webhooks.pod import workload_pod_group_injector
from tests.integration.scheduling.conftest import provider_manager
from tests.support import clusters, expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
CONFIG_MAPS = ResourceRef("", "v1", "ConfigMap", "configmaps")


async def _pod_groups(api: KubeClient, ns: str, count: int) -> list[Obj]:
    """The live PodGroups once there are `count`: a deleted one waits (terminating) behind the
    podgroup-protection finalizer for the controller-manager, which the apiserver shape lacks."""

    async def check() -> tuple[list[Obj]]:
        groups = [g for g in await api.list(POD_GROUPS, ns) if not g["metadata"].get("deletionTimestamp")]
        assert len(groups) == count, [g["metadata"]["name"] for g in groups]
        return (sorted(groups, key=lambda g: g["metadata"]["name"]),)  # truthy even when empty

    (result,) = await eventually(check)
    return result


async def _workload(api: KubeClient, lws: Obj) -> Obj:
    async def fetch() -> Obj:
        try:
            return await api.get(WORKLOADS, lws["metadata"]["namespace"], wl.lws_workload_name(lws))
        except Exception as err:
            raise AssertionError(f"workload: {err}") from err

    result: Obj = await eventually(fetch)
    return result


async def _condition(api: KubeClient, ns: str, status: str, reason: str, name: str = "test-sample") -> Obj:
    async def check() -> Obj:
        conditions = (await kubelet.get_lws(api, ns, name)).get("status", {}).get("conditions") or []
        found = {x["type"]: x for x in conditions}.get(c.CONDITION_WORKLOAD_SCHEDULING_CREATED)
        assert found is not None, conditions
        assert (found["status"], found["reason"]) == (status, reason), found
        return found

    result: Obj = await eventually(check)
    return result


async def _admitted_leader(api: KubeClient, lws: Obj, index: int) -> Obj:
    """A leader pod from the leader StatefulSet's template, through the kubernetes pod webhook."""
    meta = lws["metadata"]
    sts = await kubelet.leader_statefulset(api, meta["namespace"], meta["name"])
    pod = kubelet.leader_pod(lws, sts, index, kubelet.current_revision_key(lws))
    pod["metadata"]["annotations"].update(sts["spec"]["template"]["metadata"]["annotations"])
    workload_pod_group_injector(pod)
    return await api.create(PODS, pod)


def _refs(obj: Obj) -> list[tuple[str, str, bool]]:
    return [(r["kind"], r["name"], bool(r.get("controller"))) for r in obj["metadata"]["ownerReferences"]]


async def test_replica_mode_creates_the_workload_and_one_pod_group_per_replica(
    gang_api: KubeClient, workload_ns: str
) -> None:
    await gang_api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(workload_ns).replicas(2).size(3).scheduling({}).obj()
    )
    lws = await kubelet.get_lws(gang_api, workload_ns)
    workload = await _workload(gang_api, lws)
    assert workload["metadata"]["labels"] == {c.LABEL_SET_NAME: "test-sample"}
    assert _refs(workload) == [(c.LWS_KIND, "test-sample", True)]
    assert workload["spec"]["controllerRef"] == {
        "apiGroup": c.LWS_GROUP,
        "kind": c.LWS_KIND,
        "name": "test-sample",
    }
    [template] = workload["spec"]["podGroupTemplates"]
    assert (template["name"], template["schedulingPolicy"]) == ("replica", {"gang": {"minCount": 3}})

    groups = await _pod_groups(gang_api, workload_ns, 2)
    revision = kubelet.current_revision_key(await kubelet.get_lws(gang_api, workload_ns))
    assert [g["metadata"]["name"] for g in groups] == [
        wl.runtime_name(workload["metadata"]["name"], str(i), revision) for i in range(2)
    ]
    for i, group in enumerate(groups):
        assert group["metadata"]["labels"] == {
            c.LABEL_SET_NAME: "test-sample",
            c.LABEL_SCHEDULING_LEVEL: c.SCHEDULING_MODE_REPLICA,
            c.LABEL_GROUP_INDEX: str(i),
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        }
        assert group["spec"]["workloadRef"] == {
            "workloadName": workload["metadata"]["name"],
            "templateName": "replica",
        }
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
        assert _refs(group) == [
            (c.LWS_KIND, "test-sample", True),
            ("Workload", workload["metadata"]["name"], False),
        ]
    await _condition(gang_api, workload_ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)

    # Pods carry the mode and Workload name from their templates; the webhook names their PodGroup.
    sts = await kubelet.leader_statefulset(gang_api, workload_ns)
    annotations = sts["spec"]["template"]["metadata"]["annotations"]
    assert annotations[c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING] == c.SCHEDULING_MODE_REPLICA
    assert annotations[c.ANNOTATION_WORKLOAD_NAME] == workload["metadata"]["name"]
    leader = await _admitted_leader(gang_api, lws, 1)
    assert leader["spec"]["schedulingGroup"] == {"podGroupName": groups[1]["metadata"]["name"]}

    # Workers of the group inherit the annotations too (worker StatefulSet template).
    async def worker_statefulset() -> Obj:
        try:
            return await gang_api.get(STATEFULSETS, workload_ns, "test-sample-1")
        except Exception as err:
            raise AssertionError(f"worker statefulset: {err}") from err

    worker_sts = await eventually(worker_statefulset)
    worker_annotations = worker_sts["spec"]["template"]["metadata"]["annotations"]
    assert worker_annotations[c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING] == c.SCHEDULING_MODE_REPLICA


async def test_role_mode_makes_leader_and_worker_pod_groups(gang_api: KubeClient, workload_ns: str) -> None:
    scheduling = {"replica": {"worker": {"schedulingPolicy": {"gang": {}}}}}
    await gang_api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(workload_ns).replicas(1).size(4).scheduling(scheduling).obj()
    )
    groups = await _pod_groups(gang_api, workload_ns, 2)
    roles = {g["metadata"]["labels"][c.LABEL_ROLE]: g for g in groups}
    assert roles[c.ROLE_LEADER]["spec"]["schedulingPolicy"] == {"basic": {}}
    assert roles[c.ROLE_WORKER]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert {g["metadata"]["labels"][c.LABEL_SCHEDULING_LEVEL] for g in groups} == {c.SCHEDULING_MODE_ROLE}


async def test_whole_set_gang_follows_scale_and_scale_to_zero_keeps_the_workload(
    gang_api: KubeClient, workload_ns: str
) -> None:
    builder = (
        LeaderWorkerSetBuilder(workload_ns).replicas(2).size(2).scheduling({"schedulingPolicy": {"gang": {}}})
    )
    await gang_api.create(LEADERWORKERSETS, builder.obj())
    [group] = await _pod_groups(gang_api, workload_ns, 1)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert group["metadata"]["labels"][c.LABEL_SCHEDULING_LEVEL] == c.SCHEDULING_MODE_LWS

    await kubelet.update_lws(gang_api, workload_ns, "test-sample", lambda lws: lws["spec"].update(replicas=3))

    async def min_counts() -> bool:
        lws = await kubelet.get_lws(gang_api, workload_ns)
        workload = await gang_api.get(WORKLOADS, workload_ns, wl.lws_workload_name(lws))
        group = await gang_api.get(POD_GROUPS, workload_ns, group_name)
        got = (
            workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"],
            group["spec"]["schedulingPolicy"]["gang"]["minCount"],
        )
        assert got == (6, 6), got
        return True

    group_name = group["metadata"]["name"]
    await eventually(min_counts)

    await kubelet.update_lws(gang_api, workload_ns, "test-sample", lambda lws: lws["spec"].update(replicas=0))
    await expect.expect_valid_leader_statefulset(gang_api, workload_ns, 0)
    await _condition(gang_api, workload_ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)
    await _pod_groups(gang_api, workload_ns, 0)
    lws = await kubelet.get_lws(gang_api, workload_ns)
    workload = await gang_api.get(WORKLOADS, workload_ns, wl.lws_workload_name(lws))
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 1


async def test_cleanup_keeps_pod_groups_that_pods_still_name(gang_api: KubeClient, workload_ns: str) -> None:
    await gang_api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(workload_ns).replicas(2).size(2).scheduling({}).obj()
    )
    groups = await _pod_groups(gang_api, workload_ns, 2)
    lws = await kubelet.get_lws(gang_api, workload_ns)
    leader = await _admitted_leader(gang_api, lws, 1)
    assert leader["spec"]["schedulingGroup"]["podGroupName"] == groups[1]["metadata"]["name"]

    await kubelet.update_lws(gang_api, workload_ns, "test-sample", lambda lws: lws["spec"].update(replicas=1))
    # The controller saw the scale-down (its leader StatefulSet follows) ...
    await expect.expect_valid_leader_statefulset(gang_api, workload_ns, 1)
    # ... and keeps the group's PodGroup while the leader pod still names it.
    await consistently(lambda: _count(gang_api, workload_ns, 2))
    await gang_api.delete(PODS, workload_ns, leader["metadata"]["name"], grace_period_seconds=0)
    [kept] = await _pod_groups(gang_api, workload_ns, 1)
    assert kept["metadata"]["name"] == groups[0]["metadata"]["name"]


async def _count(api: KubeClient, ns: str, want: int) -> bool:
    return (
        len([g for g in await api.list(POD_GROUPS, ns) if not g["metadata"].get("deletionTimestamp")]) == want
    )


async def _lws_before_the_manager(api: KubeClient, ns: str, builder: LeaderWorkerSetBuilder) -> Obj:
    await api.create(LEADERWORKERSETS, builder.obj())
    return await kubelet.get_lws(api, ns)


async def test_a_foreign_workload_of_that_name_fails_the_condition(
    gang_cluster: LocalCluster, gang_api: KubeClient, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> None:
    ns = await clusters.fresh_namespace(gang_kube, request)
    lws = await _lws_before_the_manager(gang_api, ns, LeaderWorkerSetBuilder(ns).replicas(1).scheduling({}))
    name = wl.lws_workload_name(lws)
    foreign = {
        "apiVersion": wl.SCHEDULING_API_VERSION,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"podGroupTemplates": [{"name": "replica", "schedulingPolicy": {"basic": {}}}]},
    }
    await gang_api.create(WORKLOADS, foreign)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, ns):
        found = await _condition(gang_api, ns, c.CONDITION_FALSE, c.REASON_WORKLOAD_CREATE_FAILED)
        assert found["message"] == (
            f"Workload {ns}/{name} already exists but is not controlled by this LeaderWorkerSet UID"
        )
        await expect.expect_event(
            gang_api, ns, c.REASON_WORKLOAD_CREATE_FAILED, found["message"], type_="Warning"
        )
        assert await gang_api.list(STATEFULSETS, ns) == []  # prerequisites first: no leader workload


async def test_drift_of_an_owned_workload_is_reported_not_overwritten(
    gang_cluster: LocalCluster, gang_api: KubeClient, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> None:
    ns = await clusters.fresh_namespace(gang_kube, request)
    lws = await _lws_before_the_manager(gang_api, ns, LeaderWorkerSetBuilder(ns).replicas(1).scheduling({}))
    drifted = wl.desired_workload(lws)
    drifted["spec"]["podGroupTemplates"][0]["schedulingPolicy"] = {"basic": {}}
    await gang_api.create(WORKLOADS, drifted)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, ns):
        found = await _condition(gang_api, ns, c.CONDITION_FALSE, c.REASON_INVALID_SCHEDULING_CONFIGURATION)
        assert "immutable scheduling configuration drift" in found["message"]
        workload = await gang_api.get(WORKLOADS, ns, drifted["metadata"]["name"])
        assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"basic": {}}
        assert await gang_api.list(POD_GROUPS, ns) == []


async def test_a_claim_per_group_the_api_server_drops_is_named_with_its_gate_and_makes_no_pod_group(
    gang_cluster: LocalCluster, gang_api: KubeClient, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> None:
    # The local cluster serves the Workload API with DRAWorkloadResourceClaims at its default (off).
    ns = await clusters.fresh_namespace(gang_kube, request)
    claims = [{"name": "imex", "resourceClaimTemplateName": "imex-channel"}]
    builder = (
        LeaderWorkerSetBuilder(ns).replicas(1).size(2).scheduling({"replica": {"resourceClaims": claims}})
    )
    lws = await _lws_before_the_manager(gang_api, ns, builder)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, ns):
        found = await _condition(gang_api, ns, c.CONDITION_FALSE, c.REASON_INVALID_SCHEDULING_CONFIGURATION)
        assert "dropped podGroupTemplates[replica].resourceClaims" in found["message"], found
        assert "DRAWorkloadResourceClaims" in found["message"]
        workload = await _workload(gang_api, lws)  # made, without the field the server dropped
        assert "resourceClaims" not in workload["spec"]["podGroupTemplates"][0]
        assert await gang_api.list(POD_GROUPS, ns) == []


async def test_delegation_uses_the_parents_workload(
    gang_cluster: LocalCluster, gang_api: KubeClient, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> None:
    """A child LWS whose controller owns a Workload joins its template instead of making its own."""
    ns = await clusters.fresh_namespace(gang_kube, request)
    parent = await gang_api.create(
        CONFIG_MAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parent", "namespace": ns}},
    )
    parent_ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "parent",
        "uid": parent["metadata"]["uid"],
        "controller": True,
    }
    child = (
        LeaderWorkerSetBuilder(ns)
        .replicas(1)
        .size(2)
        .scheduling({})
        .annotation(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME, "trainers")
        .obj()
    )
    child["metadata"]["ownerReferences"] = [parent_ref]
    await gang_api.create(LEADERWORKERSETS, child)
    async with provider_manager(gang_cluster, c.SCHEDULER_PROVIDER_KUBERNETES, ns):
        found = await _condition(gang_api, ns, c.CONDITION_FALSE, c.REASON_PARENT_WORKLOAD_NOT_READY)
        assert found["message"] == "no parent Workload matches the LWS controller-owner chain"
        parent_workload = {
            "apiVersion": wl.SCHEDULING_API_VERSION,
            "kind": "Workload",
            "metadata": {"name": "parent-workload", "namespace": ns, "ownerReferences": [parent_ref]},
            "spec": {
                "controllerRef": {"kind": "ConfigMap", "name": "parent"},
                "podGroupTemplates": [{"name": "trainers", "schedulingPolicy": {"gang": {"minCount": 8}}}],
            },
        }
        await gang_api.create(WORKLOADS, parent_workload)
        [group] = await _pod_groups(gang_api, ns, 1)
        assert group["spec"]["workloadRef"] == {"workloadName": "parent-workload", "templateName": "trainers"}
        assert _refs(group) == [(c.LWS_KIND, "test-sample", True)]
        await _condition(gang_api, ns, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED)
        names = [w["metadata"]["name"] for w in await gang_api.list(WORKLOADS, ns)]
        assert names == ["parent-workload"]  # the child made no Workload of its own


async def test_a_deleted_workload_is_made_again_and_its_pod_groups_follow(
    gang_api: KubeClient, workload_ns: str
) -> None:
    await gang_api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(workload_ns).replicas(1).scheduling({}).obj()
    )
    lws = await kubelet.get_lws(gang_api, workload_ns)
    old = await _workload(gang_api, lws)
    await _pod_groups(gang_api, workload_ns, 1)
    await gang_api.delete(WORKLOADS, workload_ns, old["metadata"]["name"])

    async def repaired() -> bool:
        try:
            workload = await gang_api.get(WORKLOADS, workload_ns, old["metadata"]["name"])
        except Exception as err:
            raise AssertionError(f"workload: {err}") from err
        assert workload["metadata"]["uid"] != old["metadata"]["uid"]
        [group] = await gang_api.list(POD_GROUPS, workload_ns)
        refs = [r for r in group["metadata"]["ownerReferences"] if r["kind"] == "Workload"]
        assert [r["uid"] for r in refs] == [workload["metadata"]["uid"]], refs
        return True

    await eventually(repaired)


async def test_a_new_revision_gets_new_pod_groups_and_old_ones_go_with_their_pods(
    gang_api: KubeClient, workload_ns: str
) -> None:
    await gang_api.create(
        LEADERWORKERSETS, LeaderWorkerSetBuilder(workload_ns).replicas(2).scheduling({}).obj()
    )
    old_groups = await _pod_groups(gang_api, workload_ns, 2)
    lws = await kubelet.get_lws(gang_api, workload_ns)
    old_revision = kubelet.current_revision_key(lws)
    leader = await _admitted_leader(gang_api, lws, 0)  # group 0 still runs the old revision

    def new_image(obj: Obj) -> None:
        obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "nginx:next"

    await kubelet.update_lws(gang_api, workload_ns, "test-sample", new_image)

    async def rolled() -> bool:
        live = [
            g
            for g in await gang_api.list(POD_GROUPS, workload_ns)
            if not g["metadata"].get("deletionTimestamp")
        ]
        revisions = sorted(
            (
                g["metadata"]["labels"][c.LABEL_GROUP_INDEX],
                g["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH],
            )
            for g in live
        )
        new_revision = kubelet.current_revision_key(await kubelet.get_lws(gang_api, workload_ns))
        assert new_revision != old_revision
        # Both groups at the new revision; group 0's old PodGroup stays while its leader names it.
        assert revisions == sorted([("0", new_revision), ("1", new_revision), ("0", old_revision)]), revisions
        return True

    await eventually(rolled)
    assert leader["spec"]["schedulingGroup"]["podGroupName"] == old_groups[0]["metadata"]["name"]
