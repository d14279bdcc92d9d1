"""What a quiet change of the control plane leaves alone: a snapshot of a namespace's pods (UID and
restarts), StatefulSet and Deployment templates and ControllerRevisions, and the checks that it holds.

Used where a controller or the Kubernetes control plane under it is replaced (the swap with
upstream's controller, a control-plane upgrade): nothing may be recreated, restarted or re-revisioned.
"""

from __future__ import annotations

import json
from typing import Any

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    PODS,
    STATEFULSETS,
)
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

Obj = dict[str, Any]
STEADY = 5.0  # seconds a swapped-in controller is watched doing nothing


async def snapshot(api: KubeClient, ns: str) -> Obj:
    pods = await api.list(PODS, ns)
    sets = await api.list(STATEFULSETS, ns)
    deployments = await api.list(DEPLOYMENTS, ns)  # Hash identity's leaders
    revisions = await api.list(CONTROLLER_REVISIONS, ns)
    return {
        "pods": {
            p["metadata"]["name"]: (
                p["metadata"]["uid"],
                sum(s.get("restartCount", 0) for s in (p.get("status") or {}).get("containerStatuses") or []),
            )
            for p in pods
        },
        "statefulsets": {
            s["metadata"]["name"]: (s["metadata"]["uid"], json.dumps(s["spec"]["template"], sort_keys=True))
            for s in sets
        },
        "deployments": {
            d["metadata"]["name"]: (d["metadata"]["uid"], json.dumps(d["spec"]["template"], sort_keys=True))
            for d in deployments
        },
        "revisions": sorted((r["metadata"]["name"], r["metadata"]["uid"], _owner_kind(r)) for r in revisions),
    }


def _owner_kind(obj: Obj) -> str:
    owners = obj["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("kind", ""))


def without(snap: Obj, prefix: str) -> Obj:
    """The snapshot minus the objects of one LWS (the probe a swapped-in controller creates)."""
    return {
        "pods": {k: v for k, v in snap["pods"].items() if not k.startswith(prefix)},
        "statefulsets": {k: v for k, v in snap["statefulsets"].items() if not k.startswith(prefix)},
        "deployments": {k: v for k, v in snap["deployments"].items() if not k.startswith(prefix)},
        "revisions": [r for r in snap["revisions"] if not r[0].startswith(prefix)],
    }


async def settled(api: KubeClient, ns: str) -> Obj:
    """A snapshot that holds for a few seconds (the old controller has nothing left to do)."""
    baseline = await snapshot(api, ns)

    async def holds() -> bool:
        now = await snapshot(api, ns)
        assert now == baseline, diff(baseline, now)
        return True

    await consistently(holds, duration=STEADY, interval=0.5)
    return baseline


async def expect_quiet_takeover(
    api: KubeClient, ns: str, before: Obj, probe: str, workload: Obj | None = None
) -> None:
    """The new controller is working (it brings a fresh LWS, `workload` if given, to Available), and
    touched nothing else."""
    await create(api, workload or LeaderWorkerSetBuilder(ns, probe).replicas(1).size(2).obj())
    await expect_groups_available(api, ns, 1, name=probe)

    async def unchanged() -> bool:
        now = without(await snapshot(api, ns), probe)
        assert now == without(before, probe), diff(without(before, probe), now)
        return True

    await consistently(unchanged, duration=STEADY, interval=0.5)
    await api.delete(LEADERWORKERSETS, ns, probe)

    async def probe_gone() -> bool:
        return not [p for p in await api.list(PODS, ns) if p["metadata"]["name"].startswith(probe)]

    await eventually(probe_gone, timeout=LONG_TIMEOUT)


async def expect_generation_observed(api: KubeClient, ns: str, name: str) -> None:
    """The positive sign that our controller has read the set's latest spec."""
    generation = (await api.get(LEADERWORKERSETS, ns, name))["metadata"]["generation"]

    async def observed() -> bool:
        status = (await api.get(LEADERWORKERSETS, ns, name)).get("status") or {}
        return bool(status.get("observedGeneration") == generation)

    await eventually(observed, timeout=LONG_TIMEOUT)


def diff(before: Obj, now: Obj) -> str:
    lines = []
    for part in before:
        b, n = before[part], now[part]
        if isinstance(b, dict):
            for key in sorted(set(b) | set(n)):
                if b.get(key) != n.get(key):
                    lines.append(f"{part} {key}: {b.get(key)!r:.120} -> {n.get(key)!r:.120}")
        elif b != n:
            lines.append(f"{part}: {sorted(set(b) ^ set(n))}")
    return "\n".join(lines)
