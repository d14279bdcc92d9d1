"""Changing and draining the Ray and JAX examples (docs/examples) while a client keeps sending requests
through the set's Service from inside a node: a new model version rolls out with `maxSurge: 1,
maxUnavailable: 0` with no failed request and never fewer serving groups than `replicas`; an image-only
change with `update-strategy: InPlaceIfPossible` restarts the groups in their pods, which form again; a
`kubectl drain` under `disruption-budget: "1"` takes at most one group down at a time while serving goes
on."""

from __future__ import annotations

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS
from tests.e2e.realnodes.test_failures import ledger
from tests.support import workloads
from tests.support.wait import eventually
from tests.support.workloads import FORMATION_TIMEOUT, Example, Obj, available, names

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]

REPLICAS = 2  # as the examples say


async def test_a_new_model_version_rolls_out_with_no_failed_request(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    await workloads.apply_example(installed, example_ns, example)
    await available(real_api, example_ns, example)
    url = await workloads.service_url(real_api, example_ns, example)
    with workloads.load_through(url) as load:
        await eventually(lambda: len([r for r in load.results() if r["ok"]]) >= 5, message="requests served")
        lws = await real_api.get(LEADERWORKERSETS, example_ns, example.name)
        workloads.set_model_version(lws, "v2")
        async with workloads.sampled(real_api, example_ns, example) as samples:
            updated = await real_api.update(LEADERWORKERSETS, lws)
            generation = updated["metadata"]["generation"]
            await eventually(
                lambda: workloads.rolled_out(
                    real_api, example_ns, example, generation, REPLICAS, workloads.on_model_version("v2")
                ),
                timeout=FORMATION_TIMEOUT * REPLICAS,
                interval=0.5,
                message="rolled out",
            )
            await eventually(lambda: load.results()[-1]["body"]["version"] == "v2", message="answers from v2")
        results = load.stop()
    failed = workloads.failures(results, samples)
    entries = await ledger(real_api, example_ns, example.name)
    context = [str(workloads.brief(entries)), await workloads.events_text(real_api, example_ns)]
    assert failed == [], "\n".join([*failed, *context])
    assert entries == [], context  # no group failed on the way
    answered = workloads.versions(results)
    assert set(answered) == {"v1", "v2"}, answered  # the requests went on across the rollout
    assert workloads.below(samples, REPLICAS) == []


async def test_an_image_only_change_restarts_the_groups_in_their_pods(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    def in_place(lws: Obj) -> None:
        lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_UPDATE_STRATEGY] = (
            ext.UPDATE_STRATEGY_IN_PLACE
        )

    await workloads.apply_example(installed, example_ns, example, in_place)
    before = await available(real_api, example_ns, example)
    restarted = {workloads.uids(g)[i]: workloads.restarts(p) for g in before.values() for i, p in g.items()}
    target = workloads.second_tag(installed, example)
    lws = await real_api.get(LEADERWORKERSETS, example_ns, example.name)
    for container in workloads.every_container(lws):
        container["image"] = target
    updated = await real_api.update(LEADERWORKERSETS, lws)

    def on_target(pod: Obj) -> bool:
        """The pod's spec names the new tag and the kubelet restarted its container for it."""
        again = workloads.restarts(pod) > restarted.get(pod["metadata"]["uid"], 0)
        return pod["spec"]["containers"][0]["image"] == target and again

    generation = updated["metadata"]["generation"]
    await eventually(
        lambda: workloads.rolled_out(real_api, example_ns, example, generation, REPLICAS, on_target),
        timeout=FORMATION_TIMEOUT * REPLICAS,
        interval=0.5,
        message="updated in place",
    )
    after = await workloads.groups_of(real_api, example_ns, example)
    for g, group in after.items():
        assert workloads.placement(group) == workloads.placement(before[g]), f"group {g} moved or recreated"
        answer = workloads.ask(group["0"]["status"]["podIP"], example)
        assert example.pods_that_took_part(answer) == names(group), answer
    entries = await ledger(real_api, example_ns, example.name)
    assert [e for e in entries if e["action"] == "recreated"] == [], workloads.brief(entries)


async def test_a_drain_under_a_group_budget_takes_one_group_at_a_time_and_serving_goes_on(
    installed: LocalCluster, real_api: KubeClient, example_ns: str, example: Example
) -> None:
    def budget(lws: Obj) -> None:
        lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_DISRUPTION_BUDGET] = "1"

    await workloads.apply_example(installed, example_ns, example, budget)
    before = await available(real_api, example_ns, example)
    node = workloads.busiest_node(before)
    url = await workloads.service_url(real_api, example_ns, example)
    try:
        with workloads.load_through(url) as load:
            await eventually(
                lambda: len([r for r in load.results() if r["ok"]]) >= 5, message="requests served"
            )
            async with workloads.sampled(real_api, example_ns, example) as samples:
                await workloads.drain(installed, node)

                await eventually(
                    lambda: workloads.off_node(real_api, example_ns, example, node, REPLICAS),
                    timeout=FORMATION_TIMEOUT,
                    interval=0.5,
                    message=f"every group whole and Ready off {node}",
                )
            results = load.stop()
    finally:
        await workloads.uncordon(installed, node)
    assert workloads.below(samples, REPLICAS - 1) == []
    failed = workloads.failures(results, samples)
    assert failed == [], "\n".join([*failed, await workloads.events_text(real_api, example_ns)])
    moved = await workloads.groups_of(real_api, example_ns, example)
    assert [g for g in before if workloads.uids(moved[g]) != workloads.uids(before[g])], "nothing moved"
