"""`lws plan` against the full cluster: the plan for a template change, then the real rollout, whose
observed states must be the plan's, in the plan's order (plan equals reality).

The CLI runs as a separate process (`python -m leaderworkerset.cli plan`), the manager too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NODES, PODS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.cli import run_lws
from tests.support.expect import expect_deployed
from tests.support.lwsapi import NEW_IMAGE, create, leader_statefulset_revision_key, update_worker_image
from tests.support.objects import group_of, is_leader, labels
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
REPLICAS, SIZE = 4, 2
PLAN_FILES = itertools.count()


def gpu_lws(ns: str) -> LeaderWorkerSetBuilder:
    """4 groups of 2 pods with one GPU each, one surge group, never below 4 ready groups."""
    return (
        LeaderWorkerSetBuilder(ns)
        .replicas(REPLICAS)
        .size(SIZE)
        .max_surge(1)
        .max_unavailable(0)
        .leader_resources({GPU: "1"})
        .worker_resources({GPU: "1"})
    )


async def lws_plan(
    cluster: LocalCluster, ns: str, manifest: Obj, tmp_path: Path, *flags: str
) -> tuple[int, str]:
    path = tmp_path / f"plan-{next(PLAN_FILES)}.yaml"
    await asyncio.to_thread(path.write_text, yaml.safe_dump(manifest))
    result = await run_lws(cluster, "plan", "-f", str(path), "-n", ns, *flags)
    assert result.code in (0, 3), f"lws plan failed ({result.code}): {result.err}"
    return result.code, result.out


def is_subsequence(observed: list[tuple[int, int]], planned: list[tuple[int, int]]) -> bool:
    position = 0
    for state in observed:
        try:
            position = planned.index(state, position)
        except ValueError:
            return False
    return True


async def test_plan_equals_the_rollout_the_controller_runs(
    api: KubeClient, ns: str, full_cluster: LocalCluster, tmp_path: Path
) -> None:
    await create(api, gpu_lws(ns).obj())
    await expect_deployed(api, ns, REPLICAS, SIZE)
    old_key = await leader_statefulset_revision_key(api, ns)

    # Nothing to roll: same spec, then only replicas.
    _, same = await lws_plan(full_cluster, ns, gpu_lws(ns).obj(), tmp_path, "-o", "json")
    assert json.loads(same)["change"] == "no change"
    _, scaled = await lws_plan(full_cluster, ns, gpu_lws(ns).replicas(6).obj(), tmp_path, "-o", "json")
    assert json.loads(scaled)["change"] == "scale only"

    # The template change: its plan, with the GPUs the surge needs and the free ones.
    new = gpu_lws(ns).worker_image(NEW_IMAGE).obj()
    code, out = await lws_plan(full_cluster, ns, new, tmp_path, "-o", "json", "--fail-on-warning")
    plan = json.loads(out)
    assert code == 0, plan["warnings"]
    assert plan["change"] == "rollout"
    assert plan["peak_extra_accelerators"] == {GPU: SIZE}  # one surge group of two 1-GPU pods
    allocatable = sum(int(n["status"]["allocatable"].get(GPU, "0")) for n in await api.list(NODES))
    used = sum(
        int((container.get("resources") or {}).get("requests", {}).get(GPU, "0"))
        for pod in await api.list(PODS)
        if pod["spec"].get("nodeName") and pod["status"].get("phase") not in ("Succeeded", "Failed")
        for container in pod["spec"]["containers"]
    )
    assert plan["free_accelerators"][GPU] == allocatable - used
    assert plan["time_to_ready_seconds"] is not None  # the groups just became ready
    assert all(step["capacity"] == {"groups": 100} for step in plan["steps"])
    planned = [(0, REPLICAS)] + [(step["updated"], step["old"]) for step in plan["steps"]]

    # A surge that cannot fit is a warning, and --fail-on-warning exits non-zero.
    huge = gpu_lws(ns).worker_resources({GPU: "100000"}).obj()
    code, table = await lws_plan(full_cluster, ns, huge, tmp_path, "--fail-on-warning")
    assert code == 3, table
    assert "warning: needs " in table

    # The rollout itself, every leader pod change seen through a watch. A group being recreated
    # counts as old until its new leader exists (the plan moves it in one step); only the surge
    # ordinal (>= replicas) really leaves.
    latest: dict[int, str] = {}
    observed: list[tuple[int, int]] = []

    def record(pods: dict[str, Obj]) -> None:
        alive = {}
        for pod in pods.values():
            if is_leader(pod) and not pod["metadata"].get("deletionTimestamp"):
                alive[group_of(pod)] = labels(pod)[c.LABEL_TEMPLATE_REVISION_HASH]
        latest.update(alive)
        for ordinal in [o for o in latest if o >= REPLICAS and o not in alive]:
            del latest[ordinal]
        state = (sum(k != old_key for k in latest.values()), sum(k == old_key for k in latest.values()))
        if not observed or observed[-1] != state:
            observed.append(state)

    async with Watch(api, PODS, ns, record):
        await update_worker_image(api, ns)
        await expect_deployed(api, ns, REPLICAS, SIZE)

    assert observed[0] == planned[0], (observed, planned)
    assert observed[-1] == planned[-1], (observed, planned)
    assert is_subsequence(observed, planned), f"observed {observed} is not in plan order {planned}"
    # Polling could miss a state; a watch should not, but at least the surge peak must be seen.
    assert (1, REPLICAS) in observed, observed
