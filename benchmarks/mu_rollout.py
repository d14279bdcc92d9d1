"""A rollout with maxUnavailable on a cluster whose StatefulSets ignore it, with and without the
controller's emulation (docs/rollout-control.md), timed end to end (not a pass/fail test).

    uv run python -m benchmarks.mu_rollout [--groups 20] [--max-unavailable 4] [--ready-delay-ms 2000]

Starts a full-shape local cluster with the Kubernetes feature gate `MaxUnavailableStatefulSet=false`
(how 1.34-1.36 behave by default) and a kwok pod-ready delay, installs the CRDs and, in turn for each
mode, runs `lws manager` as a separate process, creates an LWS of --groups groups of 2 with
`maxUnavailable: --max-unavailable`, waits until it is Available, changes the worker image and waits
until every group is updated and the set is Available again. Modes:

* `emulated`: the manager as shipped: it deletes outdated leader pods itself, up to the budget;
* `one-at-a-time`: the same manager with that step switched off (patched in the manager process by
  this harness only): the StatefulSet controller replaces one group at a time;
* `upstream`: upstream's Go controller (sigs.k8s.io/lws v0.9.0, built and cached like the control
  plane) reconciling, our manager serving only the webhooks (as in the swap test).

`LWS_KUBERNETES_VERSION=1.36` runs it on 1.36, whose StatefulSets ignore maxUnavailable by default.

Reported per mode: rollout time, and the highest number of groups without a Ready leader seen by a
watch on the pods (every state the API server went through, nothing sampled).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import eventually
from tests.support.watch import Watch

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.state import pod_ready
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NAMESPACES, PODS

Obj = dict[str, Any]
NAME = "bench"
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"
MODES = ("emulated", "one-at-a-time", "upstream")

# `python -c` with this program runs `lws ...` with the emulation step switched off.
_WITHOUT_EMULATION = """
from leaderworkerset.controllers.leaderworkerset.replacement import LeaderReplacement

async def _off(self, round_, leader_sts):
    return None

LeaderReplacement.step = _off
from leaderworkerset.cli.main import main
main()
"""


class ManagerWithoutEmulation(ManagerProcess):
    @property
    def argv(self) -> list[str]:
        command = super().argv[len(self.python) :]
        assert command[:2] == ["-m", "leaderworkerset.cli"], command
        return [*self.python, "-c", _WITHOUT_EMULATION, *command[2:]]


def managers_for(mode: str, cluster: LocalCluster) -> list[ManagerProcess]:
    if mode == "emulated":
        return [ManagerProcess(cluster, name="lws-manager-emulated")]
    if mode == "one-at-a-time":
        return [ManagerWithoutEmulation(cluster, name="lws-manager-one-at-a-time")]
    if mode == "upstream":
        return [
            ManagerProcess(cluster, name="lws-webhooks-for-upstream", extra_args=("--webhooks-only",)),
            UpstreamControllers(cluster, tools.ensure_tool(tools.UPSTREAM_LWS), "lws-upstream-v0.9.0"),
        ]
    raise SystemExit(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")


async def settled(api: KubeClient, ns: str, groups: int) -> bool:
    """Available at the current generation with every group ready and updated."""
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    status = lws.get("status") or {}
    available = any(
        x["type"] == c.CONDITION_AVAILABLE and x["status"] == c.CONDITION_TRUE
        for x in status.get("conditions") or []
    )
    return bool(
        available
        and status.get("observedGeneration") == lws["metadata"]["generation"]
        and status.get("updatedReplicas") == groups
        and status.get("readyReplicas") == groups
    )


async def run(api: KubeClient, groups: int, max_unavailable: int) -> tuple[float, int]:
    ns = f"bench-mu-{uuid.uuid4().hex[:6]}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    lws = LeaderWorkerSetBuilder(ns, NAME).replicas(groups).size(2).max_unavailable(max_unavailable)
    await api.create(LEADERWORKERSETS, lws.obj())
    await eventually(lambda: settled(api, ns, groups), timeout=600, interval=0.2)

    peaks: list[int] = []

    def observe(pods: dict[str, Obj]) -> None:
        ready = {
            p["metadata"]["labels"].get(c.LABEL_GROUP_INDEX)
            for p in pods.values()
            if p["metadata"]["labels"].get(c.LABEL_WORKER_INDEX) == "0"
            and pod_ready(p)
            and not p["metadata"].get("deletionTimestamp")
        }
        peaks.append(groups - len(ready))

    async with Watch(api, PODS, ns, observe):
        path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"
        started = time.monotonic()
        await api.json_patch(
            LEADERWORKERSETS, ns, NAME, [{"op": "replace", "path": path, "value": NEW_IMAGE}]
        )
        await eventually(lambda: settled(api, ns, groups), timeout=1800, interval=0.2)
        elapsed = time.monotonic() - started
    await api.delete(NAMESPACES, None, ns)
    return elapsed, max(peaks)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--max-unavailable", type=int, default=4)
    parser.add_argument("--ready-delay-ms", type=int, default=2000)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lws-bench-mu-"))
    options = ClusterOptions(
        shape="full",
        feature_gates="MaxUnavailableStatefulSet=false",
        pod_ready_delay_ms=args.ready_delay_ms,
        die_with_parent=True,
    )
    cluster = LocalCluster("bench-mu", workdir, build.ensure_binaries(), options)
    await asyncio.to_thread(cluster.start)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-bench"))
    try:
        await install_crds(api.lightkube)
        print(
            f"{args.groups} groups of 2, maxUnavailable {args.max_unavailable}, pods Ready after "
            f"{args.ready_delay_ms} ms, MaxUnavailableStatefulSet=false, "
            f"Kubernetes {cluster.kubernetes_version}"
        )
        for mode in args.modes.split(","):
            managers = managers_for(mode, cluster)
            for manager in managers:
                await manager.start()
            try:
                elapsed, peak = await run(api, args.groups, args.max_unavailable)
            finally:
                for manager in managers:
                    await manager.stop()
            print(f"  {mode:>14}: rollout {elapsed:6.1f}s, at most {peak} groups down at once")
    finally:
        await api.close()
        cluster.stop()


if __name__ == "__main__":
    asyncio.run(main())
