"""`kubectl drain` of 2 of 6 nodes under a 6-group set, on the full cluster (kwok nodes, the real
scheduler, StatefulSet and disruption controllers, so an eviction a budget forbids is really refused).

* With `leaderworkerset.dev/disruption-budget: "1"` and our controller: at every state the API server
  goes through (a watch, nothing sampled) at least 5 groups are Ready, both drains complete, every
  budget is locked again afterwards and the budgets go with the deleted set.
* For comparison, what a user does with upstream today: upstream's controller and one plain
  PodDisruptionBudget over the set's pods (maxUnavailable 1 pod, and one group's worth of pods).
  Nothing is asserted about its Ready groups; both timelines are printed and recorded in
  docs/disruption-budgets.md (no timing in pass/fail).

Groups of 2 pods asking 2 GPUs each on nodes of 8: the scheduler spreads them, so each drained node
holds pods of several groups, and the 4 nodes left hold the whole set. kwok makes a pod Ready 2 s
after it starts, so a replacement takes visible time.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget.decision import group_label, observe_groups
from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DEPLOYMENTS, LEADERWORKERSETS, NODES, PODDISRUPTIONBUDGETS, PODS
from tests.e2e.conftest import MANAGERS, running_manager
from tests.support import clusters
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import CliResult, kubectl, kubectl_argv, lws_ok, run
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create, update_worker_image
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import LONG_TIMEOUT, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NAME = "serve"
REPLICAS, SIZE, NODE_COUNT, DRAINED = 6, 2, 6, 2
DRAIN_TIMEOUT = "300s"
# The comparison is recorded, not judged: a drain stuck this long is reported as such.
COMPARISON_DRAIN_TIMEOUT = "180s"
TIMELINES_ENV = "LWS_DRAIN_TIMELINES"


@pytest.fixture(scope="module")
def drain_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = ClusterOptions(
        shape="full", nodes=NODE_COUNT, pod_ready_delay_ms=2000, die_with_parent=True, supervise=True
    )
    yield from clusters.own(request, "drain", options)


@pytest.fixture(scope="module")
async def drain_api(drain_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async for api in clusters.api_with_crds(drain_cluster):
        yield api


@pytest.fixture(scope="module")
async def drain_manager(drain_cluster: LocalCluster, drain_api: KubeClient) -> AsyncIterator[ManagerProcess]:
    async for manager in running_manager(drain_cluster, "lws-manager-drain"):
        yield manager


@pytest.fixture
async def drain_ns(
    drain_cluster: LocalCluster, drain_manager: ManagerProcess, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A fresh namespace; when the test ends every node is schedulable again and the namespace is
    gone with its pods, so the next test finds the nodes' accelerators free (two sets fill them)."""
    ns = await clusters.namespace_in(drain_cluster, request)
    try:
        yield ns
    finally:
        for node in await _node_names(drain_cluster):
            await kubectl(drain_cluster, "uncordon", node)
        await kubectl(drain_cluster, "delete", "namespace", ns, "--wait=true", "--timeout=180s")


async def _node_names(cluster: LocalCluster) -> list[str]:
    out = await kubectl(cluster, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
    return sorted(out.split())


def _builder(ns: str) -> LeaderWorkerSetBuilder:
    gpus = {"nvidia.com/gpu": "2"}
    return (
        LeaderWorkerSetBuilder(ns, NAME)
        .replicas(REPLICAS)
        .size(SIZE)
        .leader_resources(gpus)
        .worker_resources(gpus)
    )


@dataclass
class Timeline:
    """Ready groups in every state the watch saw, with the seconds since the drains began."""

    lws: Obj
    start: float = field(default_factory=time.monotonic)
    points: list[tuple[float, int]] = field(default_factory=list)

    def observe(self, pods: dict[str, Obj]) -> None:
        views = observe_groups(self.lws, pods.values(), frozenset(), {})
        ready = sum(1 for view in views if view.ready)
        if not self.points or self.points[-1][1] != ready:
            self.points.append((time.monotonic() - self.start, ready))

    @property
    def fewest(self) -> int:
        return min(ready for _, ready in self.points)

    def render(self, title: str) -> str:
        lines = [f"{title}: fewest Ready groups {self.fewest}"]
        lines += [f"  t={at:6.1f}s  {'#' * ready:<{REPLICAS}}  {ready} Ready" for at, ready in self.points]
        return "\n".join(lines)


async def _every_group_ready(api: KubeClient, ns: str, lws: Obj) -> None:
    """Every pod of every group Ready before the drains start. A Hash set is Available once its
    leaders are (kwok does not evaluate the group-ready readiness gate), maybe before its workers:
    a timeline started then would count groups still starting as taken down by the drain."""

    async def ready() -> bool:
        views = observe_groups(lws, await api.list(PODS, ns), frozenset(), {})
        assert sum(1 for view in views if view.ready) == REPLICAS, "groups still starting"
        return True

    await eventually(ready, timeout=LONG_TIMEOUT)


async def _busiest_nodes(api: KubeClient, ns: str, lws: Obj) -> list[str]:
    """The DRAINED nodes that hold pods of the most groups (a drain of them disrupts the most)."""
    groups: dict[str, set[str]] = {}
    for pod in await api.list(PODS, ns):
        node = pod["spec"].get("nodeName")
        groups.setdefault(node, set()).add(pod["metadata"]["labels"][group_label(lws)])
    ranked = sorted(groups, key=lambda node: (-len(groups[node]), node))
    return ranked[:DRAINED]


async def _drain(cluster: LocalCluster, nodes: list[str], timeout: str) -> list[CliResult]:
    """`kubectl drain` of every node at once (separate processes, as two operators would);
    only the set's pods are evicted, so nothing else on the shared nodes matters."""
    selector = f"--pod-selector={c.LABEL_SET_NAME}={NAME}"
    drains = [
        run(
            kubectl_argv(cluster.kubectl, cluster.kubeconfig, "drain", node, selector, f"--timeout={timeout}")
        )
        for node in nodes
    ]
    return list(await asyncio.gather(*drains))


@dataclass(frozen=True)
class Drained:
    timeline: Timeline
    nodes: list[str]
    refusals: dict[str, str]  # node -> the end of kubectl's error, for a drain that did not complete


async def _drain_under_watch(
    cluster: LocalCluster,
    api: KubeClient,
    ns: str,
    title: str,
    timeout: str = DRAIN_TIMEOUT,
    meanwhile: Callable[[], Awaitable[None]] | None = None,
) -> Drained:
    """Drain the two busiest nodes while a watch records the Ready groups; printed for the docs.
    `meanwhile` runs just before the drains start (a rollout, say); the set must settle after both."""
    await expect_groups_available(api, ns, REPLICAS, name=NAME)
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    await _every_group_ready(api, ns, lws)
    nodes = await _busiest_nodes(api, ns, lws)
    timeline = Timeline(lws)
    async with Watch(api, PODS, ns, timeline.observe):
        if meanwhile is not None:
            await meanwhile()
        results = await _drain(cluster, nodes, timeout)
        refusals = {n: r.err.strip()[-300:] for n, r in zip(nodes, results, strict=True) if r.code != 0}
        if not refusals:
            await expect_groups_available(api, ns, REPLICAS, name=NAME)
    outcome = "both drains completed" if not refusals else f"drains not completed in {timeout}: {refusals}"
    print("\n" + timeline.render(f"{title}, drained {', '.join(nodes)}; {outcome}"))
    _record(title, timeline, completed=not refusals)
    return Drained(timeline, nodes, refusals)


def _record(title: str, timeline: Timeline, *, completed: bool) -> None:
    """With LWS_DRAIN_TIMELINES=<file>, append the timeline as a JSON line: the data of the plot in
    docs/disruption-budgets.md (benchmarks/drain_timeline.py). A measurement, never asserted."""
    path = os.environ.get(TIMELINES_ENV)
    if path:
        line = {"title": title, "completed": completed, "points": timeline.points}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


async def _budgets(api: KubeClient, ns: str) -> list[Obj]:
    return await api.list(PODDISRUPTIONBUDGETS, ns, label_selector=ext.LABEL_GROUP_DISRUPTION_BUDGET)


async def _status_while_released(cluster: LocalCluster, api: KubeClient, ns: str) -> str:
    """`lws status` at the first moment a budget is released (for the docs)."""

    async def released() -> bool:
        assert any(pdb["spec"]["minAvailable"] == 0 for pdb in await _budgets(api, ns)), "none released"
        return True

    await eventually(released, timeout=LONG_TIMEOUT, interval=0.1)
    return await lws_ok(cluster, "status", NAME, "-n", ns)


async def _expect_locked(api: KubeClient, ns: str) -> None:
    """Every group has its budget, and every budget is locked."""

    async def locked() -> bool:
        budgets = await _budgets(api, ns)
        assert len(budgets) == REPLICAS, f"{len(budgets)} budgets"
        assert all(pdb["spec"]["minAvailable"] == SIZE for pdb in budgets), "a budget is released"
        return True

    await eventually(locked, timeout=LONG_TIMEOUT)


@pytest.mark.parametrize("identity", [c.GROUP_IDENTITY_ORDINAL, c.GROUP_IDENTITY_HASH])
async def test_a_drain_of_two_nodes_keeps_all_but_one_group_ready(
    drain_cluster: LocalCluster, drain_api: KubeClient, drain_ns: str, identity: str
) -> None:
    """A Hash group comes back under a new key: its budget is a new one, the old one goes."""
    api, ns = drain_api, drain_ns
    budgeted = _builder(ns).group_identity(identity).annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1")
    await create(api, budgeted.obj())
    await _expect_locked(api, ns)
    status = asyncio.create_task(_status_while_released(drain_cluster, api, ns))
    drained = await _drain_under_watch(drain_cluster, api, ns, f"disruption-budget 1 (ours, {identity})")
    assert drained.refusals == {}, drained.refusals
    left = [
        p["metadata"]["name"] for p in await api.list(PODS, ns) if p["spec"].get("nodeName") in drained.nodes
    ]
    assert left == [], f"pods still on the drained nodes: {left}"
    timeline = drained.timeline
    tree = await status
    print(tree)
    assert "disruption budget: 1 group at a time, 6 group budgets" in tree, tree
    assert timeline.fewest >= REPLICAS - 1, timeline.render("ours")
    await _expect_locked(api, ns)

    await api.delete(LEADERWORKERSETS, ns, NAME)

    async def collected() -> bool:
        assert await _budgets(api, ns) == [], "budgets outlive their set"
        return True

    await eventually(collected, timeout=LONG_TIMEOUT)


async def _status_while_surged(cluster: LocalCluster, api: KubeClient, ns: str) -> str:
    """`lws status` at the first moment a group is being replaced ahead of the drain (for the docs)."""

    async def surged() -> bool:
        pods = await api.list(PODS, ns)
        assert any(ext.ANNOTATION_DRAIN_SURGE in (p["metadata"].get("annotations") or {}) for p in pods)
        return True

    await eventually(surged, timeout=LONG_TIMEOUT, interval=0.1)
    return await lws_ok(cluster, "status", NAME, "-n", ns)


async def test_a_hash_set_with_surge_replaces_each_group_before_the_drain_takes_it(
    drain_cluster: LocalCluster, drain_api: KubeClient, drain_ns: str
) -> None:
    """Drain-aware replacement: with maxSurge 1 each group on a drained node is replaced elsewhere
    first and only then released, so the set never has fewer than spec.replicas Ready groups."""
    api, ns = drain_api, drain_ns
    surging = (
        _builder(ns)
        .group_identity(c.GROUP_IDENTITY_HASH)
        .max_surge(1)
        .max_unavailable(0)
        .annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1")
    )
    await create(api, surging.obj())
    await _expect_locked(api, ns)
    status = asyncio.create_task(_status_while_surged(drain_cluster, api, ns))
    drained = await _drain_under_watch(
        drain_cluster, api, ns, "disruption-budget 1 + maxSurge 1 (ours, Hash)"
    )
    assert drained.refusals == {}, drained.refusals
    tree = await status
    print(tree)
    assert "drain replacement: surge first, 1 group at a time (maxSurge)" in tree, tree
    assert drained.timeline.fewest >= REPLICAS, drained.timeline.render("ours, Hash with surge")
    await _expect_locked(api, ns)
    deploy = await api.get(DEPLOYMENTS, ns, NAME)
    assert deploy["spec"]["replicas"] == REPLICAS, "the surge is given back once the drains are done"


async def test_a_drain_during_a_rolling_update_deadlocks_neither(
    drain_cluster: LocalCluster, drain_api: KubeClient, drain_ns: str
) -> None:
    """A new image rolls (maxUnavailable 1, the StatefulSet controller deletes pods itself, no budget
    holds it) while the two nodes are drained: both drains and the rollout complete, the budgets end
    locked. The rollout's group counts as down, so the drain mostly waits for it (not asserted: the
    rollout never asks our budget)."""
    api, ns = drain_api, drain_ns
    await create(api, _builder(ns).annotation(ext.ANNOTATION_DISRUPTION_BUDGET, "1").obj())
    await _expect_locked(api, ns)

    async def roll() -> None:
        await update_worker_image(api, ns, name=NAME)

    title = "disruption-budget 1 (ours) during a rolling update"
    drained = await _drain_under_watch(drain_cluster, api, ns, title, meanwhile=roll)
    assert drained.refusals == {}, drained.refusals
    await _expect_locked(api, ns)


def _plain_pdb(ns: str, max_unavailable: int) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{NAME}-pods", "namespace": ns},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {c.LABEL_SET_NAME: NAME}}},
    }


@pytest.mark.parametrize(
    "max_unavailable", [pytest.param(1, id="1 pod"), pytest.param(SIZE, id="one group of pods")]
)
async def test_the_same_drain_under_upstream_with_a_plain_pdb(
    drain_cluster: LocalCluster,
    drain_api: KubeClient,
    drain_ns: str,
    drain_manager: ManagerProcess,
    max_unavailable: int,
) -> None:
    """The comparison: recorded, not judged (the drains must still complete)."""
    api, ns = drain_api, drain_ns
    webhooks = ManagerProcess(drain_cluster, "lws-webhooks-drain", extra_args=("--webhooks-only",))
    upstream = UpstreamControllers(drain_cluster, tools.ensure_tool(tools.UPSTREAM_LWS), "lws-upstream-drain")
    await drain_manager.stop()
    for process in (webhooks, upstream):
        MANAGERS.append(process)
        await process.start()
    try:
        await create(api, _builder(ns).obj())
        await api.create(PODDISRUPTIONBUDGETS, _plain_pdb(ns, max_unavailable))
        title = f"upstream + plain PDB maxUnavailable {max_unavailable} pod(s)"
        drained = await _drain_under_watch(drain_cluster, api, ns, title, COMPARISON_DRAIN_TIMEOUT)
        if drained.refusals:
            print(await kubectl(drain_cluster, "get", "pods,pdb", "-n", ns, "-o", "wide"))
            print(await kubectl(drain_cluster, "get", "events", "-n", ns, "--field-selector", "type=Warning"))
    finally:
        for process in (upstream, webhooks):
            await process.stop()
            MANAGERS.remove(process)
        await drain_manager.start()
    nodes = await api.list(NODES)
    assert len(nodes) == NODE_COUNT
