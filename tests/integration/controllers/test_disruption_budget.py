"""Group disruption budgets against the real API server (core/disruption/, docs/disruption-budgets.md).

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
