"""Group disruption budgets against the real API server (core/disruptionbudget/, docs/disruption-budgets.md).

The disruption-budget controller runs in-process with the LWS and pod controllers, webhooks off. The
test plays the scheduler, the kubelet and `kubectl cordon`: Node objects whose `spec.unschedulable`
it flips, leader pods bound to them. Groups have one pod, so a group is Ready when its leader is.
Every observation also checks the invariant: never more released budgets than the budget allows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODDISRUPTIONBUDGETS, PODS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder, NodeBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]
Obj = dict[str, Any]
NAME = "serve"


@pytest.fixture
async def nodes(api: KubeClient, ns: str) -> AsyncIterator[list[str]]:
    """Three nodes of the test's own (nodes are cluster-scoped: named after the namespace)."""
    names = [f"{ns}-{suffix}"[:63] for suffix in ("a", "b", "c")]
    for name in names:
        await api.create(NODES, NodeBuilder(name).obj())
    yield names
    for name in names:
        await api.delete(NODES, None, name)


async def _cordon(api: KubeClient, node: str, unschedulable: bool = True) -> None:
    await api.merge_patch(NODES, None, node, {"spec": {"unschedulable": unschedulable}})


async def _budgets(api: KubeClient, ns: str) -> dict[str, Obj]:
    items = await api.list(PODDISRUPTIONBUDGETS, ns, label_selector=ext.LABEL_GROUP_DISRUPTION_BUDGET)
    return {item["metadata"]["name"]: item for item in items}


async def _released(api: KubeClient, ns: str, *, want: set[str], budgets: int, allowed: int = 1) -> None:
    """Eventually exactly the groups `want` are released among `budgets` budgets; at no poll more
    than `allowed` Ready groups' worth (the test only makes groups not Ready on purpose)."""

    async def check() -> bool:
        found = await _budgets(api, ns)
        released = {name.rsplit("-", 1)[1] for name, pdb in found.items() if pdb["spec"]["minAvailable"] == 0}
        assert len(released) <= allowed, f"budget exceeded: released {sorted(released)}"
        assert len(found) == budgets, f"{sorted(found)} budgets, want {budgets}"
        assert released == want, f"released {sorted(released)}, want {sorted(want)}"
        return True

    await eventually(check)


async def _place(api: KubeClient, lws: Obj, group: int, node: str, *, ready: bool = True) -> None:
    """The scheduler and kubelet: the group's leader (re)created on `node`, then Ready."""
    ns = lws["metadata"]["namespace"]
    existing = await api.get_or_none(PODS, ns, f"{NAME}-{group}")
    if existing is not None:
        await api.delete(PODS, ns, f"{NAME}-{group}", grace_period_seconds=0)
    await _wait_gone(api, ns, f"{NAME}-{group}")
    await kubelet.create_leader_pods(api, lws, group, group + 1, node_name=node)
    if ready:
        await kubelet.set_pod_ready(api, ns, f"{NAME}-{group}")


async def _wait_gone(api: KubeClient, ns: str, pod: str) -> None:
    async def gone() -> bool:
        assert await api.get_or_none(PODS, ns, pod) is None, f"pod {pod} still there"
        return True

    await eventually(gone)


async def _set_budget(api: KubeClient, ns: str, value: str | None) -> None:
    await api.merge_patch(
        LEADERWORKERSETS, ns, NAME, {"metadata": {"annotations": {ext.ANNOTATION_DISRUPTION_BUDGET: value}}}
    )


async def _start(api: KubeClient, ns: str, nodes: list[str], replicas: int = 2) -> Obj:
    lws = LeaderWorkerSetBuilder(ns, NAME).replicas(replicas).size(1)
    await api.create(LEADERWORKERSETS, lws.annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1").obj())
    await kubelet.leader_statefulset(api, ns, NAME)
    stored = await kubelet.get_lws(api, ns, NAME)
    for group in range(replicas):
        await _place(api, stored, group, nodes[group % 2])
    await _released(api, ns, want=set(), budgets=replicas)  # every group locked
    return stored


async def test_a_drain_of_two_nodes_takes_one_group_at_a_time(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    a, b, c_ = nodes
    lws = await _start(api, ns, nodes)
    pdb = (await _budgets(api, ns))[f"{NAME}-group-0"]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert pdb["spec"]["selector"]["matchLabels"] == {c.LABEL_SET_NAME: NAME, c.LABEL_GROUP_INDEX: "0"}
    owner = pdb["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"]) == (c.LWS_KIND, lws["metadata"]["uid"])
    assert pdb["metadata"]["managedFields"][0]["manager"] == c.FIELD_MANAGER

    await _cordon(api, a)
    await _cordon(api, b)
    await _released(api, ns, want={"0"}, budgets=2)  # group 1 waits for group 0
    await expect.expect_event(
        api,
        ns,
        ext.EVENT_GROUP_RELEASED_FOR_DRAIN,
        "group 0 released for eviction: 1 of the budget's groups down",
    )
    await _place(api, lws, 0, c_, ready=False)  # evicted, rescheduled, not Ready yet: still released
    await _released(api, ns, want={"0"}, budgets=2)
    await kubelet.set_pod_ready(api, ns, f"{NAME}-0")
    await _released(api, ns, want={"1"}, budgets=2)  # group 0 locked again, group 1's turn
    await _place(api, lws, 1, c_)
    await _released(api, ns, want=set(), budgets=2)


async def test_a_failing_group_on_a_drained_node_never_blocks_the_drain(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    a, b, _ = nodes
    lws = await _start(api, ns, nodes)
    await _place(api, lws, 1, b, ready=False)  # group 1 is failing on b
    await _cordon(api, a)
    await _cordon(api, b)
    # Group 1 is down already: released at no cost, and it spends the budget, so group 0 waits.
    await _released(api, ns, want={"1"}, budgets=2, allowed=2)


async def test_budgets_follow_scale_down_and_go_with_the_annotation(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    await _start(api, ns, nodes)
    await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"spec": {"replicas": 1}})
    await _released(api, ns, want=set(), budgets=1)
    await _set_budget(api, ns, None)
    await _released(api, ns, want=set(), budgets=0)


async def test_a_bad_value_is_reported_and_no_budget_is_kept(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    await _start(api, ns, nodes)
    await _set_budget(api, ns, "0")
    await _released(api, ns, want=set(), budgets=0)
    message = (
        f"annotation {ext.ANNOTATION_DISRUPTION_BUDGET}: '0' is invalid: must be a whole number of groups "
        "of at least 1, or a percentage from 1% to 100%; no PodDisruptionBudget is managed for this set"
    )
    await expect.expect_condition(
        api, ns, ext.CONDITION_DISRUPTION_BUDGET_INVALID, c.CONDITION_TRUE, message, NAME
    )
    await expect.expect_event(api, ns, ext.EVENT_INVALID_DISRUPTION_BUDGET, message, "Warning")
    await _set_budget(api, ns, "50%")
    await _released(api, ns, want=set(), budgets=2)


# --- drain-aware replacement (groupIdentity Hash, core/disruptionbudget/drainsurge.py) ---------------------


async def _start_hash(api: KubeClient, ns: str, nodes: list[str], max_surge: int) -> list[Obj]:
    """A Hash set of 2 one-pod groups on nodes a and b, each Ready, every budget locked."""
    builder = LeaderWorkerSetBuilder(ns, NAME).group_identity(c.GROUP_IDENTITY_HASH).replicas(2).size(1)
    builder = builder.max_surge(max_surge).max_unavailable(0 if max_surge else 1)
    await api.create(LEADERWORKERSETS, builder.annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1").obj())
    await _expect_deployment_replicas(api, ns, 2)
    leaders = [await kubelet.create_hash_leader(api, ns, NAME, node=node) for node in nodes[:2]]
    for leader in leaders:
        await kubelet.set_pod_ready(api, ns, leader["metadata"]["name"])
    await _released(api, ns, want=set(), budgets=2)
    return leaders


async def _expect_deployment_replicas(api: KubeClient, ns: str, replicas: int) -> None:
    async def scaled() -> bool:
        deploy = await kubelet.leader_deployment(api, ns, NAME)
        assert deploy["spec"]["replicas"] == replicas, deploy["spec"]["replicas"]
        return True

    await eventually(scaled)


async def _expect_marked(api: KubeClient, ns: str, leader: str, marked: bool = True) -> None:
    async def check() -> bool:
        pod = await api.get(PODS, ns, leader)
        annotations = pod["metadata"].get("annotations") or {}
        assert (annotations.get(ext.ANNOTATION_DRAIN_SURGE) == "true") == marked, annotations
        return True

    await eventually(check)


def _key(leader: Obj) -> str:
    return str(leader["metadata"]["labels"][c.LABEL_GROUP_KEY])


async def test_a_hash_set_with_surge_replaces_a_cordoned_group_before_releasing_it(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    a, _, c_ = nodes
    old, _ = await _start_hash(api, ns, nodes, max_surge=1)
    name = old["metadata"]["name"]
    await _cordon(api, a)
    await _expect_marked(api, ns, name)
    note = f"group {_key(old)} is on a cordoned node: a replacement group is made first (surge)"
    await expect.expect_event(api, ns, ext.EVENT_GROUP_SURGED_FOR_DRAIN, note)
    await _expect_deployment_replicas(api, ns, 3)  # the replacement first
    await _released(api, ns, want=set(), budgets=2)  # the old group keeps its budget meanwhile
    # The ReplicaSet's new leader is admitted over spec.replicas (the marked group holds its slot).
    new = await kubelet.create_hash_leader(api, ns, NAME)
    new_name = new["metadata"]["name"]

    async def admitted() -> bool:
        pod = await api.get(PODS, ns, new_name)
        assert not pod["spec"].get("schedulingGates"), "still gated"
        return True

    await eventually(admitted)
    await kubelet.bind_pod(api, ns, new_name, c_)
    await _released(api, ns, want=set(), budgets=3)  # not Ready yet: nothing released
    await kubelet.set_pod_ready(api, ns, new_name)
    await _released(api, ns, want={_key(old)}, budgets=3)  # only now may the drain take it
    await api.delete(PODS, ns, name, grace_period_seconds=0)  # the drain's eviction
    await _expect_deployment_replicas(api, ns, 2)
    await _released(api, ns, want=set(), budgets=2)


async def test_a_hash_set_without_surge_releases_under_the_budget_and_says_why(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    a, _, _ = nodes
    old, _ = await _start_hash(api, ns, nodes, max_surge=0)
    await _cordon(api, a)
    await _released(api, ns, want={_key(old)}, budgets=2)
    note = f"group {_key(old)} released without a replacement first: maxSurge is 0"
    await expect.expect_event(api, ns, ext.EVENT_DRAIN_WITHOUT_SURGE, note)
    await _expect_marked(api, ns, old["metadata"]["name"], marked=False)
    await _expect_deployment_replicas(api, ns, 2)


async def test_uncordoned_before_the_replacement_is_up_the_surge_is_given_back(
    api: KubeClient, ns: str, nodes: list[str]
) -> None:
    a, _, _ = nodes
    old, _ = await _start_hash(api, ns, nodes, max_surge=1)
    await _cordon(api, a)
    await _expect_deployment_replicas(api, ns, 3)
    await _cordon(api, a, unschedulable=False)
    await _expect_marked(api, ns, old["metadata"]["name"], marked=False)
    await _expect_deployment_replicas(api, ns, 2)
    await _released(api, ns, want=set(), budgets=2)
