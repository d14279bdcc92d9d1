"""maxUnavailable on a cluster whose StatefulSets ignore it: Kubernetes 1.37 with the feature gate
`MaxUnavailableStatefulSet=false` on every component behaves like 1.34-1.36 by default (the API
server drops `rollingUpdate.maxUnavailable`, the StatefulSet controller replaces one pod at a time).

An LWS of 6 groups of 2 with `maxUnavailable: 3` rolls a new image. The leader StatefulSet on the
server has no maxUnavailable (the cluster really ignores it), yet a watch on the leader pods sees 3
groups down at once (the controller deletes the outdated leaders itself) and never more than 3; the
rollout completes; one MaxUnavailableEmulated event is recorded; `lws plan` and `lws status` say
that this cluster rolls one group at a time. Swapping to upstream's controller mid-rollout replaces
no group twice. kwok makes pods Ready after 2 s, so that replacements
overlap and concurrency can be seen.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import pod_ready
from leaderworkerset.core.rollout.leaderreplacement import NOTE_PREFIX
from leaderworkerset.devcluster import tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.e2e.conftest import MANAGERS, running_manager
from tests.support import clusters
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import lws_ok, run_lws
from tests.support.expect import events_with, expect_groups_available
from tests.support.lwsapi import NEW_IMAGE, create, update_worker_image
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import LONG_TIMEOUT, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NAME = "mu"
REPLICAS = 6
MAX_UNAVAILABLE = 3


@pytest.fixture(scope="module")
def gate_off_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = ClusterOptions(
        shape="full",
        feature_gates="MaxUnavailableStatefulSet=false",
        pod_ready_delay_ms=2000,
        die_with_parent=True,
        supervise=True,
    )
    yield from clusters.own(request, "mu-gate-off", options)


@pytest.fixture(scope="module")
async def gate_off_api(gate_off_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async for api in clusters.api_with_crds(gate_off_cluster):
        yield api


@pytest.fixture(scope="module")
async def gate_off_manager(
    gate_off_cluster: LocalCluster, gate_off_api: KubeClient
) -> AsyncIterator[ManagerProcess]:
    async for manager in running_manager(gate_off_cluster, "lws-manager-mu"):
        yield manager


@pytest.fixture
async def gate_off_ns(
    gate_off_cluster: LocalCluster, gate_off_manager: ManagerProcess, request: pytest.FixtureRequest
) -> str:
    return await clusters.namespace_in(gate_off_cluster, request)


def _builder(ns: str) -> LeaderWorkerSetBuilder:
    return LeaderWorkerSetBuilder(ns, NAME).replicas(REPLICAS).size(2).max_unavailable(MAX_UNAVAILABLE)


class Unavailability:
    """Per watched state: how many of the 6 groups have no Ready, non-terminating leader."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def observe(self, pods: dict[str, Obj]) -> None:
        leaders = [p for p in pods.values() if p["metadata"]["labels"].get(c.LABEL_WORKER_INDEX) == "0"]
        available = {
            p["metadata"]["labels"].get(c.LABEL_GROUP_INDEX)
            for p in leaders
            if pod_ready(p) and not p["metadata"].get("deletionTimestamp")
        }
        self.counts.append(REPLICAS - len(available))


async def test_maxunavailable_is_honoured_where_statefulsets_ignore_it(
    gate_off_api: KubeClient, gate_off_ns: str, gate_off_cluster: LocalCluster, tmp_path: Path
) -> None:
    api, ns = gate_off_api, gate_off_ns
    await create(api, _builder(ns).obj())
    await expect_groups_available(api, ns, REPLICAS, name=NAME)

    # (a) The API server dropped the field we apply: this cluster ignores maxUnavailable.
    sts = await api.get(STATEFULSETS, ns, NAME)
    rolling = sts["spec"]["updateStrategy"].get("rollingUpdate") or {}
    assert "maxUnavailable" not in rolling, rolling

    # (e) before the change: `lws plan` of the new image says so.
    changed = _builder(ns).worker_image(NEW_IMAGE).obj()
    path = tmp_path / "new.yaml"
    path.write_text(yaml.safe_dump(changed))
    plan = json.loads(await lws_ok(gate_off_cluster, "plan", "-f", str(path), "-n", ns, "-o", "json"))
    assert [n for n in plan["notes"] if n.startswith(NOTE_PREFIX)], plan
    table = await run_lws(gate_off_cluster, "plan", "-f", str(path), "-n", ns)
    assert table.code == 0, table.err
    assert NOTE_PREFIX in " ".join(table.out.split()), table.out

    unavailability = Unavailability()
    async with Watch(api, PODS, ns, unavailability.observe):
        await update_worker_image(api, ns, name=NAME)

        # (c) The rollout completes: every group updated and Available.
        async def rolled() -> bool:
            lws = await api.get(LEADERWORKERSETS, ns, NAME)
            assert lws["status"].get("observedGeneration") == lws["metadata"]["generation"]
            return True

        await eventually(rolled, timeout=LONG_TIMEOUT)
        await expect_groups_available(api, ns, REPLICAS, name=NAME)
    # (b) Three groups were replaced at once (the StatefulSet controller alone takes one), never more.
    assert max(unavailability.counts) == MAX_UNAVAILABLE, unavailability.counts
    assert unavailability.counts[-1] == 0

    # (d) One MaxUnavailableEmulated event for this rollout.
    async def announced() -> list[Obj]:
        events = await events_with(api, ns, c.EVENT_MAX_UNAVAILABLE_EMULATED)
        assert len(events) == 1, events
        return events

    events = await eventually(announced, timeout=LONG_TIMEOUT)
    assert events[0]["type"] == c.EVENT_TYPE_NORMAL
    assert events[0]["note"].startswith(
        f"The API server dropped maxUnavailable from leader statefulset {NAME}"
    )
    assert "up to 3 groups at a time" in events[0]["note"]

    # (e) `lws status` shows the line.
    status = json.loads(await lws_ok(gate_off_cluster, "status", NAME, "-n", ns, "-o", "json"))
    assert [line for line in status.get("rollout", []) if line.startswith(NOTE_PREFIX)], status
    tree = await lws_ok(gate_off_cluster, "status", NAME, "-n", ns)
    assert NOTE_PREFIX in tree


class Incarnations:
    """Every pod UID seen per pod name: a name with two UIDs was recreated once."""

    def __init__(self) -> None:
        self.uids: dict[str, set[str]] = {}

    def observe(self, pods: dict[str, Obj]) -> None:
        for pod in pods.values():
            self.uids.setdefault(pod["metadata"]["name"], set()).add(pod["metadata"]["uid"])


async def test_a_swap_to_upstream_mid_emulated_rollout_replaces_each_group_once(
    gate_off_api: KubeClient,
    gate_off_ns: str,
    gate_off_cluster: LocalCluster,
    gate_off_manager: ManagerProcess,
) -> None:
    """Ours rolls the top half three at a time (a partition holds the rest), then upstream's controller
    takes over and finishes one at a time: every pod was recreated exactly once, by the rollout."""
    api, ns = gate_off_api, gate_off_ns
    held = REPLICAS // 2
    await create(api, _builder(ns).partition(held).obj())
    await expect_groups_available(api, ns, REPLICAS, name=NAME)
    incarnations = Incarnations()
    webhooks = ManagerProcess(gate_off_cluster, "lws-webhooks-mu-swap", extra_args=("--webhooks-only",))
    upstream = UpstreamControllers(gate_off_cluster, tools.ensure_tool(tools.UPSTREAM_LWS), "lws-upstream-mu")
    async with Watch(api, PODS, ns, incarnations.observe):
        await update_worker_image(api, ns, name=NAME)

        async def top_half_updated() -> bool:
            status = (await api.get(LEADERWORKERSETS, ns, NAME))["status"]
            return bool(
                status.get("updatedReplicas") == REPLICAS - held and status.get("readyReplicas") == REPLICAS
            )

        await eventually(top_half_updated, timeout=LONG_TIMEOUT)
        await gate_off_manager.stop()
        for process in (webhooks, upstream):
            MANAGERS.append(process)
            await process.start()
        try:
            release = {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 0}}}}
            await api.merge_patch(LEADERWORKERSETS, ns, NAME, release)

            async def all_updated() -> bool:
                status = (await api.get(LEADERWORKERSETS, ns, NAME))["status"]
                return bool(
                    status.get("updatedReplicas") == REPLICAS and status.get("readyReplicas") == REPLICAS
                )

            await eventually(all_updated, timeout=LONG_TIMEOUT)
        finally:
            for process in (upstream, webhooks):
                await process.stop()
                MANAGERS.remove(process)
            await gate_off_manager.start()
    recreated = {name: len(uids) for name, uids in incarnations.uids.items()}
    assert len(recreated) == REPLICAS * 2, recreated  # every pod of the 6 groups of 2 was seen
    assert set(recreated.values()) == {2}, recreated  # each replaced exactly once
