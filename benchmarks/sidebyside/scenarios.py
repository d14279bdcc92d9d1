"""The scenarios, each run against one controller (or none, for the floor) in its own namespace.

A scenario has an unmeasured setup and a measured action that ends when its goal holds (polled
every 0.25 s by the harness, as the cluster admin, whose requests the audit policy does not count).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.sidebyside.sizes import Size
from tests.support.builders import IMAGE, DisaggregatedSetBuilder, LeaderWorkerSetBuilder

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import (
    CORE_EVENTS,
    DISAGGREGATEDSETS,
    LEADERWORKERSETS,
    NAMESPACES,
    PODS,
    STATEFULSETS,
)

Obj = dict[str, Any]
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"
POLL = 0.25
SLOW_FINALIZER = "bench.leaderworkerset.test/slow-termination"


class GoalTimeoutError(RuntimeError):
    pass


@dataclass
class Ctx:
    api: KubeClient
    cluster: LocalCluster
    size: Size
    rest: RestClient
    extra: dict[str, Any] = field(default_factory=dict)


async def until(goal: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ApiStatusError, KeyError):
            if await goal():
                return
        if time.monotonic() > deadline:
            raise GoalTimeoutError(f"{what}: not reached in {timeout:.0f} s")
        await asyncio.sleep(POLL)


# ---- objects ------------------------------------------------------------------------------------


def lws(ns: str, name: str, replicas: int, size: int, surge: int = 0, unavailable: int = 1) -> Obj:
    return (
        LeaderWorkerSetBuilder(ns, name).replicas(replicas).size(size).max_surge(surge)
        .max_unavailable(unavailable).obj()
    )  # fmt: skip


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not pod["metadata"].get("deletionTimestamp") and any(
        x["type"] == "Ready" and x["status"] == "True" for x in conditions
    )


async def ready_pods(api: KubeClient, ns: str) -> int:
    return sum(1 for p in await api.list(PODS, ns) if _ready(p))


async def all_available(api: KubeClient, ns: str, want: dict[str, int], size: int) -> bool:
    """Every named LWS is Available with `want` groups ready and updated, and no other pod exists."""
    sets = {x["metadata"]["name"]: x for x in await api.list(LEADERWORKERSETS, ns)}
    for name, replicas in want.items():
        status = (sets.get(name) or {}).get("status") or {}
        conditions = {x["type"]: x["status"] for x in status.get("conditions") or []}
        if conditions.get(c.CONDITION_AVAILABLE) != c.CONDITION_TRUE:
            return False
        if (status.get("readyReplicas"), status.get("updatedReplicas"), status.get("replicas")) != (
            replicas,
            replicas,
            replicas,
        ):
            return False
    pods = await api.list(PODS, ns)
    return len(pods) == sum(want.values()) * size and all(_ready(p) for p in pods)


async def new_namespace(api: KubeClient, ns: str) -> None:
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


async def delete_namespace(api: KubeClient, ns: str, timeout: float, wait: bool = True) -> None:
    """Delete it; with `wait`, until it is gone (a name to reuse)."""
    with contextlib.suppress(ApiStatusError):
        await api.delete(NAMESPACES, None, ns)
    if not wait:
        return

    async def gone() -> bool:
        try:
            await api.get(NAMESPACES, None, ns)
        except ApiStatusError as err:
            return err.code == 404
        return False

    await until(gone, timeout, f"namespace {ns} deleted")


async def delete_workloads(api: KubeClient, ns: str) -> None:
    """Delete the namespace's DisaggregatedSets and LeaderWorkerSets before its pods: a controller
    then sees a teardown. Pods deleted under a live LWS read as failed groups, which each controller
    recreates (RecreateGroupOnPodRestart) into the next scenario's window."""
    for ref in (DISAGGREGATEDSETS, LEADERWORKERSETS):
        with contextlib.suppress(ApiStatusError):
            await api.request("DELETE", ref.collection_path(ns))


async def pods_gone(api: KubeClient, rest: RestClient, ns: str, timeout: float) -> None:
    """Until no pod of the (terminating) namespace is left, so the next scenario is timed on a quiet
    cluster. The pods go at once (one delete-collection, grace 0; the namespace refuses new ones)
    rather than one by one through the devcluster's pod reaper, which made cleanup the longest step."""

    async def none_left() -> bool:
        if not await api.list(PODS, ns):
            return True
        # A large collection may outlast the client's read timeout, or its response (every deleted
        # pod, megabytes) may be cut short under load: the server goes on deleting either way.
        with contextlib.suppress(OSError, http.client.HTTPException):
            path = f"/api/v1/namespaces/{ns}/pods"
            await asyncio.to_thread(rest.request, "DELETE", path, {"gracePeriodSeconds": 0})
        return False

    await until(none_left, timeout, f"pods of {ns} gone")


async def create_lws(api: KubeClient, obj: Obj) -> None:
    """Create, retrying while the admission webhooks are not reachable yet."""

    async def created() -> bool:
        try:
            await api.create(LEADERWORKERSETS, obj, obj["metadata"]["namespace"])
        except ApiStatusError as err:
            if err.code == 409:
                return True
            raise
        return True

    await until(created, 60, f"create {obj['metadata']['name']}")


async def set_image(api: KubeClient, ns: str, name: str, image: str) -> None:
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"
    await api.json_patch(LEADERWORKERSETS, ns, name, [{"op": "replace", "path": path, "value": image}])


async def set_replicas(api: KubeClient, ns: str, name: str, replicas: int) -> None:
    await api.merge_patch(LEADERWORKERSETS, ns, name, {"spec": {"replicas": replicas}})


# ---- scenarios ----------------------------------------------------------------------------------

Action = Callable[[Ctx, str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Scenario:
    name: str
    groups: Callable[[Size], int]  # groups the measured action touches (for per-group figures)
    setup: Action | None
    act: Action
    needs_controller: bool = True
    # Measured next, in the same namespace, on what this one left (saves a setup per phase).
    then: tuple[Scenario, ...] = ()


async def _nothing(ctx: Ctx, ns: str) -> dict[str, Any]:
    return {}


async def large_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.large_groups
    await create_lws(ctx.api, lws(ns, "large", g, 4))
    await until(lambda: all_available(ctx.api, ns, {"large": g}, 4), ctx.size.timeout, "large Available")
    return {"pods": 4 * g}


async def settle_after_load(ctx: Ctx, ns: str) -> dict[str, Any]:
    await asyncio.sleep(2)  # the last status writes land before the idle window opens
    return {}


async def idle_after_load_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    await asyncio.sleep(ctx.size.idle_seconds)
    return {"loaded_pods": 4 * ctx.size.large_groups}


async def many_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    n = ctx.size.many_lws
    await asyncio.gather(*(create_lws(ctx.api, lws(ns, f"small-{i}", 2, 2)) for i in range(n)))
    want = {f"small-{i}": 2 for i in range(n)}
    await until(lambda: all_available(ctx.api, ns, want, 2), ctx.size.timeout, "many Available")
    return {"pods": 4 * n}


async def rolling_setup(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.rolling_groups
    await create_lws(ctx.api, lws(ns, "roll", g, 2, surge=2, unavailable=2))
    await until(lambda: all_available(ctx.api, ns, {"roll": g}, 2), ctx.size.timeout, "roll Available")
    return {}


async def _updated_everywhere(api: KubeClient, ns: str, name: str, groups: int, size: int) -> bool:
    if not await all_available(api, ns, {name: groups}, size):
        return False
    pods = await api.list(PODS, ns)
    workers = [p for p in pods if p["metadata"]["labels"].get(c.LABEL_WORKER_INDEX) != "0"]
    return all(p["spec"]["containers"][0]["image"] == NEW_IMAGE for p in workers)


async def rolling_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.rolling_groups
    await set_image(ctx.api, ns, "roll", NEW_IMAGE)
    await until(lambda: _updated_everywhere(ctx.api, ns, "roll", g, 2), ctx.size.timeout, "rollout done")
    return {"pods": 2 * g}


async def recreate_setup(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.recreate_groups
    await create_lws(ctx.api, lws(ns, "recreate", g, 2))
    await until(lambda: all_available(ctx.api, ns, {"recreate": g}, 2), ctx.size.timeout, "Available")
    leaders = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await ctx.api.list(PODS, ns)}
    ctx.extra["uids"] = leaders
    return {}


async def recreate_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.recreate_groups
    hit = list(range(0, g, 2))
    for index in hit:
        await asyncio.to_thread(chaos.restart_container, ctx.rest, ns, f"recreate-{index}-1")
    before = ctx.extra.pop("uids")

    async def recreated() -> bool:
        pods = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await ctx.api.list(PODS, ns)}
        fresh = all(pods.get(f"recreate-{i}") not in (None, before[f"recreate-{i}"]) for i in hit)
        return fresh and await all_available(ctx.api, ns, {"recreate": g}, 2)

    await until(recreated, ctx.size.timeout, "groups recreated")
    return {"groups_recreated": len(hit), "pods": 2 * len(hit)}


async def scale_setup(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.scale_groups
    await create_lws(ctx.api, lws(ns, "scale", g, 2))
    await until(lambda: all_available(ctx.api, ns, {"scale": g}, 2), ctx.size.timeout, "Available")
    return {}


async def scale_up_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.scale_groups
    await set_replicas(ctx.api, ns, "scale", 2 * g)
    await until(lambda: all_available(ctx.api, ns, {"scale": 2 * g}, 2), ctx.size.timeout, "scaled up")
    return {"pods": 2 * g}


async def scale_down_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.scale_groups
    target = max(1, g // 2)  # from the 2G that scale_up left
    await set_replicas(ctx.api, ns, "scale", target)
    await until(lambda: all_available(ctx.api, ns, {"scale": target}, 2), ctx.size.timeout, "scaled down")
    return {"pods": 2 * (2 * g - target)}


async def idle_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    await asyncio.sleep(ctx.size.idle_seconds)
    return {"loaded_pods": 0}


# ---- the floor: plain StatefulSets, no controller -------------------------------------------------


def plain_sts(ns: str, name: str, replicas: int) -> Obj:
    labels = {"bench.leaderworkerset.test/sts": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "serviceName": "",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "worker", "image": IMAGE}]},
            },
        },
    }


async def _floor(ctx: Ctx, ns: str, sets: list[tuple[str, int]]) -> dict[str, Any]:
    await asyncio.gather(*(ctx.api.create(STATEFULSETS, plain_sts(ns, n, r), ns) for n, r in sets))
    want = sum(r for _, r in sets)
    await until(lambda: _count_ready(ctx.api, ns, want), ctx.size.timeout, "floor pods Ready")
    return {"pods": want}


async def _count_ready(api: KubeClient, ns: str, want: int) -> bool:
    return await ready_pods(api, ns) >= want


async def floor_large_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.large_groups
    return await _floor(ctx, ns, [("floor", g), *((f"floor-{i}", 3) for i in range(g))])


async def floor_many_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    sets: list[tuple[str, int]] = []
    for i in range(ctx.size.many_lws):
        sets += [(f"small-{i}", 2), (f"small-{i}-0", 1), (f"small-{i}-1", 1)]
    return await _floor(ctx, ns, sets)


# ---- stall: a rolling update whose old worker pods terminate slowly -------------------------------


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


async def slow_terminator(api: KubeClient, ns: str, delay: float, stop: asyncio.Event) -> int:
    """Hold each terminating pod that carries our finalizer for `delay` s, then let it go."""
    released = 0
    while not stop.is_set():
        with contextlib.suppress(ApiStatusError):
            for pod in await api.list(PODS, ns):
                meta = pod["metadata"]
                since = meta.get("deletionTimestamp")
                held = since and SLOW_FINALIZER in (meta.get("finalizers") or [])
                if held and time.time() - _stamp(since) >= delay:
                    with contextlib.suppress(ApiStatusError):
                        await api.merge_patch(PODS, ns, meta["name"], {"metadata": {"finalizers": None}})
                        released += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), POLL)
    return released


async def stall_setup(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.stall_groups
    await create_lws(ctx.api, lws(ns, "stall", g, 2, surge=2, unavailable=2))
    await until(lambda: all_available(ctx.api, ns, {"stall": g}, 2), ctx.size.timeout, "Available")
    for pod in await ctx.api.list(PODS, ns):
        if pod["metadata"]["labels"].get(c.LABEL_WORKER_INDEX) != "0":
            patch = {"metadata": {"finalizers": [SLOW_FINALIZER]}}
            await ctx.api.merge_patch(PODS, ns, pod["metadata"]["name"], patch)
    return {}


def _log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def stall_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    g = ctx.size.stall_groups
    kcm_log = ctx.cluster.logdir / "kube-controller-manager.log"
    offset = _log_size(kcm_log)
    stop = asyncio.Event()
    terminator = asyncio.create_task(slow_terminator(ctx.api, ns, ctx.size.stall_delay, stop))
    try:
        await set_image(ctx.api, ns, "stall", NEW_IMAGE)
        await until(lambda: _updated_everywhere(ctx.api, ns, "stall", g, 2), ctx.size.timeout, "rollout")
    finally:
        stop.set()
        released = await terminator
    with kcm_log.open("rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    # The StatefulSet controller requeues (with exponential back-off) each time it cannot create a
    # worker pod whose old namesake is still terminating.
    being_deleted = sum(1 for line in text.splitlines() if "being deleted" in line and f'key="{ns}/' in line)
    events = [e for e in await ctx.api.list(CORE_EVENTS, ns) if e.get("reason") == "FailedCreate"]
    return {
        "pods": 2 * g,
        "slow_pods_released": released,
        "kcm_being_deleted_lines": being_deleted,
        "failed_create_events": sum(int(e.get("count") or 1) for e in events),
        "failed_create_being_deleted": sum(
            int(e.get("count") or 1) for e in events if "being deleted" in e.get("message", "")
        ),
    }


async def clear_finalizers(api: KubeClient, ns: str) -> None:
    with contextlib.suppress(ApiStatusError):
        for pod in await api.list(PODS, ns):
            if SLOW_FINALIZER in (pod["metadata"].get("finalizers") or []):
                with contextlib.suppress(ApiStatusError):
                    await api.merge_patch(
                        PODS, ns, pod["metadata"]["name"], {"metadata": {"finalizers": None}}
                    )


# ---- DisaggregatedSet rollout -----------------------------------------------------------------------

DS_ROLES = ("prefill", "decode")


async def ds_setup(ctx: Ctx, ns: str) -> dict[str, Any]:
    builder = DisaggregatedSetBuilder(ns, "ds")
    for role in DS_ROLES:
        builder = builder.role(role, ctx.size.ds_replicas, size=2)
    await ctx.api.create(DISAGGREGATEDSETS, builder.obj(), ns)
    await until(lambda: _ds_settled(ctx.api, ns, ctx.size.ds_replicas, IMAGE), ctx.size.timeout, "DS ready")
    return {}


async def _ds_settled(api: KubeClient, ns: str, replicas: int, image: str) -> bool:
    """One child LWS per role, all of one revision and Available, every worker on `image`.

    Judged from the children, not the DisaggregatedSet's status: upstream v0.9.0 writes none."""
    children = await api.list(LEADERWORKERSETS, ns, label_selector=f"{c.LABEL_DS_NAME}=ds")
    if (
        len(children) != len(DS_ROLES)
        or len({x["metadata"]["labels"][c.LABEL_DS_REVISION] for x in children}) != 1
    ):
        return False
    want = {x["metadata"]["name"]: replicas for x in children}
    if not await all_available(api, ns, want, 2):
        return False
    workers = [
        p for p in await api.list(PODS, ns) if p["metadata"]["labels"].get(c.LABEL_WORKER_INDEX) != "0"
    ]
    return all(p["spec"]["containers"][0]["image"] == image for p in workers)


async def ds_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    ds = await ctx.api.get(DISAGGREGATEDSETS, ns, "ds")
    for role in ds["spec"]["roles"]:
        role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = NEW_IMAGE
    await ctx.api.update(DISAGGREGATEDSETS, ds)
    await until(
        lambda: _ds_settled(ctx.api, ns, ctx.size.ds_replicas, NEW_IMAGE), ctx.size.timeout, "DS rolled"
    )
    return {"pods": 2 * len(DS_ROLES) * ctx.size.ds_replicas}


# ---- memory: RSS with many pods in the cluster ------------------------------------------------------

FILLER_NAMESPACE = "bench-filler"
FILLER_PER_SET = 100


async def fill(ctx: Ctx, pods: int) -> None:
    """Plain StatefulSet pods (no LWS labels) in their own namespace, created with no controller."""
    await new_namespace(ctx.api, FILLER_NAMESPACE)
    sets = [
        (f"fill-{i}", min(FILLER_PER_SET, pods - i * FILLER_PER_SET))
        for i in range(-(-pods // FILLER_PER_SET))
    ]
    await _floor(ctx, FILLER_NAMESPACE, [s for s in sets if s[1] > 0])


async def memory_act(ctx: Ctx, ns: str) -> dict[str, Any]:
    """An LWS holding the other half of the level's pods; steady RSS 10 s after it is Available."""
    level = ctx.extra["level"]
    groups = max(1, (level - level // 2) // 4)
    await create_lws(ctx.api, lws(ns, "mem", groups, 4))
    await until(lambda: all_available(ctx.api, ns, {"mem": groups}, 4), ctx.size.timeout, "mem Available")
    await asyncio.sleep(ctx.size.settle)
    return {"cluster_pods": level // 2 + 4 * groups, "pods": 4 * groups, "mem_groups": groups}


MEMORY = Scenario("memory", lambda s: 0, None, memory_act)


SCENARIOS = (
    Scenario("idle", lambda s: 0, None, idle_act),
    Scenario("large", lambda s: s.large_groups, None, large_act,
             then=(Scenario("idle_after_load", lambda s: 0, settle_after_load, idle_after_load_act),)),
    Scenario("many", lambda s: 2 * s.many_lws, None, many_act),
    Scenario("rolling", lambda s: s.rolling_groups, rolling_setup, rolling_act),
    Scenario("recreate", lambda s: (s.recreate_groups + 1) // 2, recreate_setup, recreate_act),
    Scenario("scale_up", lambda s: s.scale_groups, scale_setup, scale_up_act,
             then=(Scenario("scale_down", lambda s: 2 * s.scale_groups - max(1, s.scale_groups // 2), None,
                            scale_down_act),)),
    Scenario("stall", lambda s: s.stall_groups, stall_setup, stall_act),
    Scenario("ds_rollout", lambda s: 2 * s.ds_replicas, ds_setup, ds_act),
)  # fmt: skip
FLOORS = (
    Scenario("large", lambda s: s.large_groups, None, floor_large_act, needs_controller=False),
    Scenario("many", lambda s: 2 * s.many_lws, None, floor_many_act, needs_controller=False),
)
