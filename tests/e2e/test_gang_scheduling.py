"""A real gang on a real scheduler: kube-scheduler with the Workload API (GenericWorkload) and
`lws manager` (schedulerProvider: kubernetes) as a separate process, webhooks included.

Three fake nodes with one CPU each, pods asking for 600m: room for exactly three pods. A group of
four with `spec.scheduling` (one gang per replica) must stay entirely unscheduled; the same group
without it gets three pods placed; a fourth node lets the whole gang in at once. The Hash variant
does the same with a group one pod larger than the nodes present.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, ResourceRef
from tests.support import clusters, gang
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]


def _node(i: int) -> NodeSpec:
    return NodeSpec(name=f"gang-node-{i}", index=i, cpu="1", memory="4Gi", gpus=0, tpus=0)


# A claim per group (PodGroup resourceClaims) needs this gate on kube-apiserver, kube-controller-manager
# (whose resourceclaim controller makes the claim) and kube-scheduler; beta and off by default in 1.37.
CLAIMS_GATE = "DRAWorkloadResourceClaims=true"
RESOURCE_CLAIMS = ResourceRef("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims")
RESOURCE_CLAIM_TEMPLATES = ResourceRef(
    "resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates"
)


@pytest.fixture(scope="module")
def gang_full_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = ClusterOptions(
        shape="full", node_specs=[_node(i) for i in range(3)], die_with_parent=True, feature_gates=CLAIMS_GATE
    )
    yield from clusters.own(request, "gang-full", clusters.with_workload_api(options))


@pytest.fixture(scope="module")
async def gang_api(gang_full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async for api in gang.api_with_crds(gang_full_cluster):
        yield api


def _lws(ns: str, gang: bool) -> Obj:
    builder = (
        LeaderWorkerSetBuilder(ns).replicas(1).size(4).no_leader_template().worker_requests({"cpu": "600m"})
    )
    return (builder.scheduling({}) if gang else builder).obj()


async def _all_pods_created(api: KubeClient, ns: str, count: int = 4) -> list[Obj]:
    async def check() -> list[Obj]:
        pods = await gang.set_pods(api, ns)
        assert len(pods) == count, [p["metadata"]["name"] for p in pods]
        return pods

    result: list[Obj] = await eventually(check)
    return result


async def _scheduler_saw_all(api: KubeClient, ns: str, count: int = 4) -> None:
    """Positive sign before a negative check: each pod is marked unschedulable by the scheduler."""

    async def check() -> bool:
        pods = await gang.set_pods(api, ns)
        verdicts = [
            next(
                (
                    x.get("status")
                    for x in p.get("status", {}).get("conditions") or []
                    if x["type"] == "PodScheduled"
                ),
                None,
            )
            for p in pods
        ]
        assert verdicts == ["False"] * count, verdicts
        return True

    await eventually(check)


async def test_a_gang_is_all_or_nothing_on_kube_scheduler(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    async with gang.manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_KUBERNETES):
        await _all_or_nothing(gang_api, *await gang.namespaces(gang_full_cluster, request, 2))


async def _all_or_nothing(api: KubeClient, gang_ns: str, plain_ns: str) -> None:

    # 1. The gang of four on three one-pod nodes: every pod in its PodGroup, none placed.
    await api.create(LEADERWORKERSETS, _lws(gang_ns, gang=True))
    pods = await _all_pods_created(api, gang_ns)
    assert all(p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in pods)
    await _scheduler_saw_all(api, gang_ns)
    await consistently(lambda: _none_scheduled(api, gang_ns))

    # 2. The same group without spec.scheduling: three of four are placed (no gang).
    await api.create(LEADERWORKERSETS, _lws(plain_ns, gang=False))

    async def three_placed() -> bool:
        pods = await gang.set_pods(api, plain_ns)
        assert (len(pods), gang.scheduled(pods)) == (4, 3), [
            (p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods
        ]
        return True

    await eventually(three_placed)
    await api.delete(LEADERWORKERSETS, plain_ns, "test-sample")

    async def plain_gone() -> bool:
        assert await gang.set_pods(api, plain_ns) == []
        return True

    # Garbage collection (kube-controller-manager) and the kwok pod reaper free the nodes; both are
    # slower than one reconcile on a loaded 2-core machine.
    await eventually(plain_gone, timeout=LONG_TIMEOUT)

    # 3. A fourth node: the whole gang is placed together.
    await api.create(NODES, _node(3).manifest())

    async def all_placed() -> bool:
        pods = await gang.set_pods(api, gang_ns)
        assert gang.scheduled(pods) == 4, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods]
        return True

    await eventually(all_placed, timeout=LONG_TIMEOUT)
    await api.delete(LEADERWORKERSETS, gang_ns, "test-sample")  # the next test's manager starts clean


async def _none_scheduled(api: KubeClient, ns: str) -> bool:
    return gang.scheduled(await gang.set_pods(api, ns)) == 0


async def test_a_hash_gang_is_all_or_nothing_on_kube_scheduler(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    """The same check with groupIdentity Hash: the leader comes from the Deployment, its PodGroup
    is made per group key while the replacement gate holds it, then the whole gang is placed."""
    nodes = [
        n["metadata"]["name"]
        for n in await gang_api.list(NODES)
        if n["metadata"]["name"].startswith("gang-node-")
    ]
    size = len(nodes) + 1  # one pod more than the nodes can hold
    [ns] = await gang.namespaces(gang_full_cluster, request, 1)
    builder = (
        LeaderWorkerSetBuilder(ns)
        .replicas(1)
        .size(size)
        .no_leader_template()
        .worker_requests({"cpu": "600m"})
        .group_identity(c.GROUP_IDENTITY_HASH)
        .scheduling({})
    )
    async with gang.manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_KUBERNETES):
        await gang_api.create(LEADERWORKERSETS, builder.obj())
        pods = await _all_pods_created(gang_api, ns, size)
        [leader] = [p for p in pods if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0"]
        key = leader["metadata"]["labels"][c.LABEL_GROUP_INDEX]
        assert len(key) == 40  # a Hash group key, not an ordinal
        assert not leader["spec"].get("schedulingGates")  # admitted once its PodGroup existed
        lws = await gang_api.get(LEADERWORKERSETS, ns, "test-sample")
        revision = leader["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
        want = wl.runtime_name(wl.lws_workload_name(lws), key, revision)
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {want}
        await _scheduler_saw_all(gang_api, ns, size)
        await consistently(lambda: _none_scheduled(gang_api, ns))

        await gang_api.create(NODES, _node(len(nodes)).manifest())

        async def all_placed() -> bool:
            placed = gang.scheduled(await gang.set_pods(gang_api, ns))
            assert placed == size, placed
            return True

        await eventually(all_placed, timeout=LONG_TIMEOUT)
        await gang_api.delete(LEADERWORKERSETS, ns, "test-sample")


async def test_each_group_shares_one_resource_claim_made_from_its_pod_groups_template(
    gang_api: KubeClient, gang_full_cluster: LocalCluster, request: pytest.FixtureRequest
) -> None:
    """One ResourceClaim per group (an IMEX channel or a TPU slice every pod of the group shares,
    lws#444): the v1.0 `spec.scheduling.replica.resourceClaims` reaches each group's PodGroup, and
    kube-controller-manager makes one claim per PodGroup that every pod of the group is given. No DRA
    driver runs here, so the claims stay unallocated and the pods Pending: the objects are the test."""
    [ns] = await gang.namespaces(gang_full_cluster, request, 1)
    await gang_api.create(
        RESOURCE_CLAIM_TEMPLATES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "imex-channel", "namespace": ns},
            "spec": {
                "spec": {
                    "devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": "imex"}}]}
                }
            },
        },
    )
    claim = {"name": "imex", "resourceClaimTemplateName": "imex-channel"}
    lws = (
        LeaderWorkerSetBuilder(ns)
        .replicas(2)
        .size(2)
        .no_leader_template()
        .scheduling({"replica": {"resourceClaims": [claim]}})
        .obj()
    )
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["resourceClaims"] = [claim]
    async with gang.manager_with(gang_full_cluster, c.SCHEDULER_PROVIDER_KUBERNETES):
        await gang_api.create(LEADERWORKERSETS, lws)
        await _all_pods_created(gang_api, ns)

        async def one_claim_per_group() -> dict[str, str]:
            claims = await gang_api.list(RESOURCE_CLAIMS, ns)
            owners = {}
            for made in claims:
                (owner,) = [r for r in made["metadata"]["ownerReferences"] if r.get("controller")]
                assert owner["kind"] == "PodGroup", owner
                owners[owner["name"]] = made["metadata"]["name"]
            assert len(claims) == len(owners) == 2, sorted(owners)
            return owners

        claim_of_group = await eventually(one_claim_per_group, timeout=LONG_TIMEOUT)

        async def every_pod_given_its_groups_claim() -> bool:
            pods = await gang.set_pods(gang_api, ns)
            given = {
                p["metadata"]["name"]: (
                    claim_of_group.get(p["spec"]["schedulingGroup"]["podGroupName"]),
                    [
                        s.get("resourceClaimName")
                        for s in (p.get("status") or {}).get("resourceClaimStatuses") or []
                    ],
                )
                for p in pods
            }
            assert len(given) == 4, given
            assert all(want is not None and [want] == got for want, got in given.values()), given
            return True

        await eventually(every_pod_given_its_groups_claim, timeout=LONG_TIMEOUT)
        await gang_api.delete(LEADERWORKERSETS, ns, "test-sample")
