"""Time from a worker's runtime crash to its group serving again, for the Ray or JAX example of
docs/examples on three real nodes: our controller recreating the group, our controller restarting it in
place (`restart-strategy: InPlace`), and upstream's controller (its v0.9.0 image) recreating it. Also
the time from `kubectl apply -k` to every group serving, and what clients see while a new model version
rolls out and while a node is drained. Not a pass/fail test.

    sudo flock /tmp/lws-realnodes.lock uv run python -m benchmarks.workload_recovery \\
        [--runtime jax|ray] [--runs 1] [--controllers ours,upstream] [--json FILE]

Starts the real-node cluster of docs/real-nodes.md (3 nodes; the manager's image, upstream's and the
example's on every node) and installs each controller in turn with its own chart (ours: charts/lws;
upstream: its chart from the `sigs.k8s.io/lws` module). Per run and mode, in a fresh namespace: apply the
example (2 groups), wait until the set is Available and a request through each leader answers from
every pod of its group; then SIGKILL the runtime process of group 0's first worker from the host and
wait until group 0 is back (every pod new, or for in place the same pods with every container
restarted), Ready, and its leader answers from every pod (tests/support/workloads.py, the same steps as
the e2e tests). The state is polled every 0.5 s, so each figure is late by up to that much.

After a recreation (not in place) the same set serves a client that keeps sending requests through its
Service from inside a node (2 at a time) while (1) a new model version rolls out (the example's
`maxSurge: 1, maxUnavailable: 0`) and (2) the node holding pods of the most groups is drained with
`kubectl drain`; ours with `leaderworkerset.dev/disruption-budget: "1"` on the set, upstream with
nothing (it has no group budget; a plain PodDisruptionBudget counts pods, docs/disruption-budgets.md).
Each reports its requests, the failed ones, and the fewest groups serving at any 0.2 s sample.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support import realnodes, workloads
from tests.support.wait import LONG_TIMEOUT, eventually

from leaderworkerset.api import extensions as ext
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NAMESPACES

# Which recoveries each controller has: upstream knows no in-place restart (it would recreate).
MODES = {"ours": ("recreate", "in place"), "upstream": ("recreate",)}


def _in_place(lws: dict[str, Any]) -> None:
    lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_RESTART_STRATEGY] = (
        ext.RESTART_STRATEGY_IN_PLACE
    )


def _budget(lws: dict[str, Any]) -> None:
    lws["metadata"].setdefault("annotations", {})[ext.ANNOTATION_DISRUPTION_BUDGET] = "1"


REPLICAS = 2  # as the examples say


def _clients_saw(results: list[dict[str, Any]], samples: list[workloads.Sample]) -> dict[str, Any]:
    return {
        "requests": len(results),
        "failed": sum(1 for r in results if not r["ok"]),
        "fewest_serving": min((s.serving for s in samples), default=0),
    }


async def _rollout_and_drain(
    cluster: LocalCluster, api: KubeClient, ns: str, example: workloads.Example
) -> dict[str, Any]:
    """A new model version rolled out, then the busiest node drained, each under a steady client."""
    url = await workloads.service_url(api, ns, example)
    record: dict[str, Any] = {}
    with workloads.load_through(url) as load:
        await eventually(lambda: any(r["ok"] for r in load.results()), timeout=LONG_TIMEOUT)
        lws = await api.get(LEADERWORKERSETS, ns, example.name)
        workloads.set_model_version(lws, "v2")
        async with workloads.sampled(api, ns, example) as samples:
            started = time.monotonic()
            generation = (await api.update(LEADERWORKERSETS, lws))["metadata"]["generation"]
            await eventually(
                lambda: workloads.rolled_out(
                    api, ns, example, generation, REPLICAS, workloads.on_model_version("v2")
                ),
                timeout=workloads.FORMATION_TIMEOUT * REPLICAS,
                interval=0.5,
            )
            record["rollout_s"] = round(time.monotonic() - started, 1)
        record["rollout"] = _clients_saw(load.stop(), samples)
    node = workloads.busiest_node(await workloads.available(api, ns, example))
    try:
        with workloads.load_through(url) as load:
            await eventually(lambda: any(r["ok"] for r in load.results()), timeout=LONG_TIMEOUT)
            async with workloads.sampled(api, ns, example) as samples:
                started = time.monotonic()
                await workloads.drain(cluster, node)
                await eventually(
                    lambda: workloads.off_node(api, ns, example, node, REPLICAS),
                    timeout=workloads.FORMATION_TIMEOUT,
                    interval=0.5,
                )
                record["drain_s"] = round(time.monotonic() - started, 1)
            record["drain"] = _clients_saw(load.stop(), samples)
    finally:
        await workloads.uncordon(cluster, node)
    return record


async def _install(cluster: LocalCluster, api: KubeClient, controller: str) -> None:
    if await realnodes.manager_available(api, replicas=1) or await realnodes.manager_available(
        api, replicas=1, image=realnodes.UPSTREAM_IMAGE
    ):
        realnodes.helm(
            cluster, "uninstall", realnodes.RELEASE, f"--namespace={realnodes.NAMESPACE}", "--wait"
        )
    if controller == "ours":
        realnodes.helm_install(cluster)
        await eventually(lambda: realnodes.manager_available(api), timeout=LONG_TIMEOUT * 2)
    else:
        realnodes.upstream_helm_install(cluster)
        await eventually(
            lambda: realnodes.manager_available(api, replicas=1, image=realnodes.UPSTREAM_IMAGE),
            timeout=LONG_TIMEOUT * 2,
        )


async def _serving(api: KubeClient, ns: str, example: workloads.Example) -> None:
    groups = await workloads.available(api, ns, example)
    for group in groups.values():
        answer = await asyncio.to_thread(workloads.ask, group["0"]["status"]["podIP"], example)
        assert example.pods_that_took_part(answer) == workloads.names(group), answer


async def _one(
    cluster: LocalCluster, api: KubeClient, example: workloads.Example, controller: str, mode: str
) -> dict[str, Any]:
    ns = f"bench-{example.runtime}-{uuid.uuid4().hex[:6]}"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        await eventually(lambda: realnodes.admits(api, ns), timeout=LONG_TIMEOUT)
        started = time.monotonic()
        change = _in_place if mode == "in place" else (_budget if controller == "ours" else None)
        await workloads.apply_example(cluster, ns, example, change)
        await _serving(api, ns, example)
        formed = time.monotonic() - started
        recovery = await workloads.crash_and_recover(api, ns, example, "1", in_place=mode == "in place")
        group = recovery.after["0"]
        running = max(workloads.last_start(p) for p in group.values())
        under_load = await _rollout_and_drain(cluster, api, ns, example) if mode == "recreate" else {}
        return {
            "runtime": example.runtime,
            "controller": controller,
            "mode": mode,
            "apply_to_serving_s": round(formed, 1),
            "crash_to_serving_s": round(recovery.seconds, 1),
            # Where the time went, on the API's clock (whole seconds): until the last container of the
            # group ran again, and from then until its leader turned Ready (the runtime's formation).
            "crash_to_last_container_s": round((running - recovery.killed).total_seconds(), 1),
            "formation_s": (workloads.ready_since(group["0"]) - running).total_seconds(),
            **under_load,
        }
    finally:
        await workloads.remove_example(api, ns, example)
        await api.delete(NAMESPACES, None, ns)


async def _run(args: argparse.Namespace) -> list[dict[str, Any]]:
    example = workloads.BY_RUNTIME[args.runtime]
    cluster = realnodes.benchmark_cluster(
        "workloads", 3, (realnodes.manager_image_archive(), realnodes.upstream_image_archive())
    )
    await asyncio.to_thread(cluster.start)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-bench"))
    results: list[dict[str, Any]] = []
    try:
        await asyncio.to_thread(workloads.ensure_image, cluster, example)
        for controller in args.controllers.split(","):
            await _install(cluster, api, controller)
            for run in range(args.runs):
                for mode in MODES[controller]:
                    results.append({"run": run, **await _one(cluster, api, example, controller, mode)})
                    print(json.dumps(results[-1]), flush=True)
    finally:
        await api.close()
        await asyncio.to_thread(cluster.stop)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runtime", choices=sorted(workloads.BY_RUNTIME), default="jax")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--controllers", default="ours,upstream")
    parser.add_argument("--json", type=Path, default=None, help="write every record here too")
    args = parser.parse_args()
    unknown = set(args.controllers.split(",")) - set(MODES)
    if unknown:
        parser.error(f"--controllers: unknown {sorted(unknown)}; known: {', '.join(MODES)}")
    results = asyncio.run(_run(args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
