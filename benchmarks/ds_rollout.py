"""A DisaggregatedSet rollout on the full local cluster, timed end to end (not a pass/fail test).

    uv run python -m benchmarks.ds_rollout [--replicas 10] [--roles 3] [--size 1] [--kubeconfig K]

Starts a full-shape local cluster (or uses --kubeconfig), installs the CRDs, runs `lws manager` as a
separate process, creates a DisaggregatedSet of --roles roles with --replicas groups of --size pods
each, waits until it is Available, changes every role's image and waits until it is Available again at
the new revision with the old children gone. Reported: time to Available, rollout time, the number
of scale writes (ScalingUp/ScalingDown events) beside the planner's own count with instant readiness, and
per role the lowest ready capacity and the highest requested capacity seen by a 50 ms poll.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.support.builders import DisaggregatedSetBuilder
from tests.support.manager import ManagerProcess
from tests.support.wait import eventually

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget
from leaderworkerset.core.disaggregated.simulation import simulate_ds_rollout
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, EVENTS, LEADERWORKERSETS, NAMESPACES

Obj = dict[str, Any]
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


async def available(api: KubeClient, ns: str, name: str) -> bool:
    ds = await api.get(DISAGGREGATEDSETS, ns, name)
    status = ds.get("status") or {}
    if status.get("observedGeneration") != ds["metadata"]["generation"]:
        return False
    return any(
        x["type"] == c.CONDITION_AVAILABLE and x["status"] == c.CONDITION_TRUE
        for x in status.get("conditions") or []
    )


async def capacity(api: KubeClient, ns: str, name: str) -> tuple[dict[str, int], dict[str, int], set[str]]:
    ready: dict[str, int] = defaultdict(int)
    asked: dict[str, int] = defaultdict(int)
    revisions: set[str] = set()
    for lws in await api.list(LEADERWORKERSETS, ns, label_selector=f"{c.LABEL_DS_NAME}={name}"):
        role = lws["metadata"]["labels"][c.LABEL_DS_ROLE]
        ready[role] += (lws.get("status") or {}).get("readyReplicas", 0)
        if not lws["metadata"].get("deletionTimestamp"):
            asked[role] += lws["spec"].get("replicas", 1)
            revisions.add(lws["metadata"]["labels"][c.LABEL_DS_REVISION])
    return ready, asked, revisions


def simulated(roles: int, replicas: int) -> tuple[int, int]:
    """Steps and scale writes of the same rollout when every replica is Ready at once."""
    targets = [RoleTarget(f"role{i}", replicas) for i in range(roles)]
    old = [
        ChildView(
            f"old-{t.name}", t.name, "old", replicas, replicas, replicas, replicas, "2026-01-01T00:00:00Z"
        )
        for t in targets
    ]
    decisions = [d for d in simulate_ds_rollout("new", targets, old) if d.kind == "scale"]
    return len(decisions), sum(len(d.scale_down) + len(d.scale_up) for d in decisions)


async def run(api: KubeClient, roles: int, replicas: int, size: int) -> None:
    ns = f"bench-ds-{uuid.uuid4().hex[:6]}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    builder = DisaggregatedSetBuilder(ns, "bench")
    for i in range(roles):
        builder = builder.role(f"role{i}", replicas, size=size)
    started = time.monotonic()
    await api.create(DISAGGREGATEDSETS, builder.obj())
    await eventually(lambda: available(api, ns, "bench"), timeout=600, interval=0.2)
    took = time.monotonic() - started
    print(f"available after create: {took:.1f}s ({roles} roles x {replicas} x size {size})")

    ds = await api.get(DISAGGREGATEDSETS, ns, "bench")
    for role in ds["spec"]["roles"]:
        role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = NEW_IMAGE
    started = time.monotonic()
    await api.update(DISAGGREGATEDSETS, ds)
    lowest: dict[str, int] = {}
    highest: dict[str, int] = {}
    while True:
        ready, asked, revisions = await capacity(api, ns, "bench")
        for role, value in ready.items():
            lowest[role] = min(lowest.get(role, value), value)
        for role, value in asked.items():
            highest[role] = max(highest.get(role, value), value)
        if len(revisions) == 1 and await available(api, ns, "bench"):
            break
        await asyncio.sleep(0.05)
    elapsed = time.monotonic() - started
    reasons = (c.EVENT_SCALING_UP, c.EVENT_SCALING_DOWN)
    writes = [e for e in await api.list(EVENTS, ns) if e.get("reason") in reasons]
    ideal_steps, ideal_writes = simulated(roles, replicas)
    print(
        f"rollout to Available at the new revision: {elapsed:.1f}s, {len(writes)} scale writes"
        f" (the planner with instant readiness: {ideal_steps} steps, {ideal_writes} scale writes)"
    )
    for role in sorted(lowest):
        print(f"  {role}: lowest ready {lowest[role]} (floor {replicas}), highest asked {highest[role]}")
    await api.delete(NAMESPACES, None, ns)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--roles", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--size", type=int, default=1)
    parser.add_argument("--kubeconfig")
    args = parser.parse_args()
    cluster: LocalCluster | None = None
    if args.kubeconfig is None:
        workdir = Path(tempfile.mkdtemp(prefix="lws-bench-ds-"))
        cluster = LocalCluster(
            "bench-ds", workdir, build.ensure_binaries(), ClusterOptions(shape="full", die_with_parent=True)
        )
        await asyncio.to_thread(cluster.start)
    kubeconfig = args.kubeconfig or str(cluster.kubeconfig if cluster else "")
    api = new_client(ClientOptions(kubeconfig=kubeconfig, field_manager="lws-bench"))
    manager = ManagerProcess(cluster) if cluster is not None else None
    try:
        await install_crds(api.lightkube)
        if manager is not None:
            await manager.start()
        await run(api, args.roles, args.replicas, args.size)
    finally:
        if manager is not None:
            await manager.stop()
        await api.close()
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    asyncio.run(main())
