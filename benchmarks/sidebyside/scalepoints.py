"""Published scale points: shapes other projects report, so users can compare.

* `grove`: the shape Grove publishes weekly, one workload of 500 replicas x 2 pods (1,000 pods) on
  100 kwok nodes; reported are the time until every pod exists (`pods_created_seconds`) and until
  all are Available (the scenario's time).
* `groups_x8`: an LWS-native point, 1,000 groups x 8 pods (8,000 pods) in one LeaderWorkerSet.

They run only when named (`--only grove,groups_x8`), with `--size scale` (100 kwok nodes); at any
other size they use the same counts, so the nodes are the only difference.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.sidebyside.scenarios import Ctx, Scenario, all_available, create_lws, lws, until

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import PODS


async def _existing_pods(api: KubeClient, ns: str) -> int:
    return sum(1 for p in await api.list(PODS, ns) if not p["metadata"].get("deletionTimestamp"))


async def _one_set(ctx: Ctx, ns: str, name: str, groups: int, size: int) -> dict[str, Any]:
    started = time.monotonic()
    await create_lws(ctx.api, lws(ns, name, groups, size))
    pods = groups * size

    async def created() -> bool:
        return await _existing_pods(ctx.api, ns) >= pods

    await until(created, ctx.size.timeout, f"{name}: {pods} pods created")
    pods_created = time.monotonic() - started
    await until(
        lambda: all_available(ctx.api, ns, {name: groups}, size), ctx.size.timeout, f"{name} Available"
    )
    return {"pods": pods, "pods_created_seconds": pods_created}


async def grove_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    return await _one_set(ctx, ns, "grove", ctx.size.grove_replicas, 2)


async def groups_x8_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    return await _one_set(ctx, ns, "groups-x8", ctx.size.x8_groups, 8)


SCALE_POINTS = (
    Scenario("grove", lambda s: s.grove_replicas, None, grove_act),
    Scenario("groups_x8", lambda s: s.x8_groups, None, groups_x8_act),
)
