"""The Volcano provider against the API server with Volcano's PodGroup CRD.

The tests play the leader StatefulSet controller and the pod webhook (`volcano_pod_group_injector`,
the function the real webhook runs); the controllers run in-process with `schedulerProvider:
volcano`, scoped to the test's namespace.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling.volcano import VOLCANO_POD_GROUPS
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from leaderworkerset.webhooks.leaderworkerset import default_lws
from leaderworkerset.webhooks.pod import volcano_pod_group_injector
from tests.support import expect, kubelet, upstream
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]


async def _leaders_with_group_names(api: KubeClient, lws: Obj, count: int) -> list[Obj]:
    """Leader pods as the StatefulSet creates them and the Volcano pod webhook stamps them."""
    meta = lws["metadata"]
    sts = await kubelet.leader_statefulset(api, meta["namespace"], meta["name"])
    created = []
    for i in range(count):
        pod = kubelet.leader_pod(lws, sts, i, kubelet.current_revision_key(lws))
        volcano_pod_group_injector(pod)
        created.append(await api.create(PODS, pod))
    return created


async def _pod_groups(api: KubeClient, ns: str, count: int) -> list[Obj]:
    async def check() -> tuple[list[Obj]]:
        groups = await api.list(VOLCANO_POD_GROUPS, ns)
        assert len(groups) == count, [g["metadata"]["name"] for g in groups]
        return (sorted(groups, key=lambda g: g["metadata"]["name"]),)  # truthy even when empty

    (result,) = await eventually(check)
    return result


async def test_upstream_volcano_example_creates_its_pod_groups(gang_api: KubeClient, volcano_ns: str) -> None:
    """`sample_gang-scheduling_lws-sample-volcano.yaml`: 2 groups of 4 pods at 50m each."""
    path = upstream.require("examples", "sample_gang-scheduling_lws-sample-volcano.yaml")
    sample = yaml.safe_load(path.read_text())
    sample["metadata"]["namespace"] = volcano_ns
    sample.setdefault("metadata", {}).setdefault("annotations", {}).update(
        {c.ANNOTATION_VOLCANO_QUEUE_NAME: "lws-queue", "volcano.sh/sla-waiting-time": "5m"}
    )  # the two annotations the example suggests uncommenting
    await gang_api.create(LEADERWORKERSETS, default_lws(sample))
    lws = await kubelet.get_lws(gang_api, volcano_ns, "lws-sample-volcano")
    leaders = await _leaders_with_group_names(gang_api, lws, 2)

    groups = await _pod_groups(gang_api, volcano_ns, 2)
    revision = kubelet.current_revision_key(lws)
    assert [g["metadata"]["name"] for g in groups] == [f"lws-sample-volcano-{i}-{revision}" for i in range(2)]
    for i, (group, leader) in enumerate(zip(groups, leaders, strict=True)):
        assert group["metadata"]["labels"] == {
            c.LABEL_SET_NAME: "lws-sample-volcano",
            c.LABEL_GROUP_INDEX: str(i),
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        }
        assert group["metadata"]["annotations"] == {"volcano.sh/sla-waiting-time": "5m"}
        assert group["metadata"]["ownerReferences"] == [kubelet.owner_reference(leader, "v1", "Pod")]
        assert group["spec"] == {"minMember": 4, "minResources": {"cpu": "200m"}, "queue": "lws-queue"}
    # The group goes on: the worker StatefulSets follow once the PodGroup exists.
    await expect.expect_valid_worker_statefulsets(gang_api, volcano_ns, name="lws-sample-volcano")


async def test_leader_ready_gangs_only_the_leader_but_reserves_the_group(
    gang_api: KubeClient, volcano_ns: str
) -> None:
    lws_obj = (
        LeaderWorkerSetBuilder(volcano_ns)
        .replicas(1)
        .size(3)
        .startup_policy(c.STARTUP_POLICY_LEADER_READY)
        .no_leader_template()
        .worker_requests({"cpu": "100m", "memory": "64Mi"})
        .obj()
    )
    await gang_api.create(LEADERWORKERSETS, lws_obj)
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    await _leaders_with_group_names(gang_api, lws, 1)
    [group] = await _pod_groups(gang_api, volcano_ns, 1)
    assert group["spec"]["minMember"] == 1
    assert group["spec"]["minResources"] == {"cpu": "300m", "memory": "192Mi"}


async def test_pod_group_of_someone_else_is_left_alone_with_an_event(
    gang_api: KubeClient, volcano_ns: str
) -> None:
    await gang_api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(volcano_ns).replicas(1).obj())
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    name = f"test-sample-0-{kubelet.current_revision_key(lws)}"
    foreign = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": volcano_ns},
        "spec": {"minMember": 9},
    }
    await gang_api.create(VOLCANO_POD_GROUPS, foreign)
    [leader] = await _leaders_with_group_names(gang_api, lws, 1)

    note = (
        f"unexpected PodGroup owner: PodGroup {volcano_ns}/{name} is not controlled by "
        f"Pod {leader['metadata']['name']} ({leader['metadata']['uid']})"
    )
    await expect.expect_event(gang_api, volcano_ns, c.EVENT_UNEXPECTED_POD_GROUP_OWNER, note, type_="Warning")
    assert (await gang_api.get(VOLCANO_POD_GROUPS, volcano_ns, name))["spec"] == {"minMember": 9}
    # No workers join a gang whose PodGroup is not ours.
    await consistently(lambda: _no_worker_statefulset(gang_api, volcano_ns))


async def _no_worker_statefulset(api: KubeClient, ns: str) -> bool:
    names = [s["metadata"]["name"] for s in await api.list(STATEFULSETS, ns)]
    return names == ["test-sample"]


async def test_typed_api_creates_replica_pod_groups_before_the_leader_statefulset(
    gang_api: KubeClient, volcano_ns: str
) -> None:
    """With spec.scheduling the LWS owns one PodGroup per replica at the current revision."""
    lws_obj = (
        LeaderWorkerSetBuilder(volcano_ns).replicas(2).size(3).worker_requests({"cpu": "100m"}).scheduling({})
    )
    await gang_api.create(LEADERWORKERSETS, lws_obj.obj())
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    groups = await _pod_groups(gang_api, volcano_ns, 2)
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    revision = kubelet.current_revision_key(lws)
    assert [g["metadata"]["name"] for g in groups] == [f"test-sample-{i}-{revision}" for i in range(2)]
    assert all(
        g["metadata"]["ownerReferences"] == [kubelet.owner_reference(lws, c.LWS_API_VERSION, c.LWS_KIND)]
        for g in groups
    )
    assert [g["spec"]["minMember"] for g in groups] == [3, 3]
    await expect.expect_valid_leader_statefulset(gang_api, volcano_ns, 2)

    async def condition() -> bool:
        conditions = (await kubelet.get_lws(gang_api, volcano_ns)).get("status", {}).get("conditions") or []
        found = {x["type"]: x for x in conditions}.get(c.CONDITION_WORKLOAD_SCHEDULING_CREATED)
        assert found is not None, conditions
        assert (found["status"], found["reason"]) == (
            c.CONDITION_TRUE,
            c.REASON_SCHEDULING_PREREQUISITES_CREATED,
        )
        return True

    await eventually(condition)
    sts = await gang_api.get(STATEFULSETS, volcano_ns, "test-sample")
    template_annotations = sts["spec"]["template"]["metadata"]["annotations"]
    assert template_annotations[c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING] == c.SCHEDULING_MODE_REPLICA


async def test_typed_api_unsupported_level_fails_the_condition_and_creates_nothing(
    gang_api: KubeClient, volcano_ns: str
) -> None:
    """An object admitted before the provider changed: the controller reports, creates nothing."""
    lws_obj = (
        LeaderWorkerSetBuilder(volcano_ns).replicas(1).scheduling({"schedulingPolicy": {"gang": {}}}).obj()
    )
    await gang_api.create(LEADERWORKERSETS, lws_obj)
    note = "spec.scheduling: the Volcano provider supports the typed API only at replica level"
    await expect.expect_event(
        gang_api, volcano_ns, c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, note, type_="Warning"
    )
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    found = {x["type"]: x for x in lws["status"]["conditions"]}[c.CONDITION_WORKLOAD_SCHEDULING_CREATED]
    assert (found["status"], found["reason"], found["message"]) == (
        c.CONDITION_FALSE,
        c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY,
        note,
    )
    assert await gang_api.list(STATEFULSETS, volcano_ns) == []
    assert await gang_api.list(VOLCANO_POD_GROUPS, volcano_ns) == []


async def test_a_deleted_pod_group_is_made_again(gang_api: KubeClient, volcano_ns: str) -> None:
    """Both paths watch their PodGroups: the leader's (classic) and the LWS's (spec.scheduling) come back."""
    await gang_api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(volcano_ns).replicas(1).obj())
    typed = LeaderWorkerSetBuilder(volcano_ns, "typed").replicas(1).scheduling({}).obj()
    await gang_api.create(LEADERWORKERSETS, typed)
    lws = await kubelet.get_lws(gang_api, volcano_ns)
    await _leaders_with_group_names(gang_api, lws, 1)
    before = {g["metadata"]["name"]: g["metadata"]["uid"] for g in await _pod_groups(gang_api, volcano_ns, 2)}
    for name in before:
        await gang_api.delete(VOLCANO_POD_GROUPS, volcano_ns, name)

    async def recreated() -> bool:
        after = {
            g["metadata"]["name"]: g["metadata"]["uid"]
            for g in await gang_api.list(VOLCANO_POD_GROUPS, volcano_ns)
        }
        assert after.keys() == before.keys(), after
        assert all(after[n] != before[n] for n in before), (before, after)
        return True

    await eventually(recreated)
