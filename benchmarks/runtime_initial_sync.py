"""An informer's initial sync of N existing pods, by streaming list and by paginated LIST.

    uv run python -m benchmarks.runtime_initial_sync [--pods 5000] [--repeats 3]

Starts a local kube-apiserver (etcd + apiserver), creates N labelled pods in one namespace (each with
a few labels, annotations and environment variables, about the size of an LWS worker pod), then runs
the sync in a fresh process per measurement, alternating the two modes: the pod informer as the
manager declares it (POD_CODEC projection, label-filtered), until the cache has synced. Reported per
mode: the process's CPU-seconds for the sync (the imports excluded), its wall time, and how much the
process's peak RSS grew during the sync (what the sync held at once; the cache itself is in both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.runtime.listwatch import HttpListerWatcher, ListOptions
from leaderworkerset.runtime.projections import POD_CODEC
from leaderworkerset.runtime.reflector import Informer, ReflectorOptions
from leaderworkerset.runtime.resources import NAMESPACES, PODS
from leaderworkerset.runtime.store import Store

NAMESPACE = "initial-sync"
LABEL = "leaderworkerset.sigs.k8s.io/name"
MODES = ("streaming", "paginated")


def pod(i: int) -> dict[str, Any]:
    group, worker = divmod(i, 4)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"lws-{group}-{worker}",
            "namespace": NAMESPACE,
            "labels": {
                LABEL: "lws",
                "leaderworkerset.sigs.k8s.io/group-index": str(group),
                "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                "leaderworkerset.sigs.k8s.io/group-key": f"{group:040x}",
                "leaderworkerset.sigs.k8s.io/template-revision-hash": "5d8f7c9b6",
            },
            "annotations": {
                "leaderworkerset.sigs.k8s.io/size": "4",
                "leaderworkerset.sigs.k8s.io/leader-name": f"lws-{group}",
            },
        },
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/pause:3.10",
                    "env": [{"name": f"LWS_VAR_{k}", "value": f"value-{k}"} for k in range(8)],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }


async def fill(kubeconfig: str, count: int) -> None:
    client = new_client(ClientOptions(kubeconfig=kubeconfig, qps=2000, burst=2000))
    try:
        await client.apply(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        queue = iter(range(count))

        async def worker() -> None:
            for i in queue:
                await client.create(PODS, pod(i))

        await asyncio.gather(*(worker() for _ in range(32)))
    finally:
        await client.close()


async def sync_once(kubeconfig: str, mode: str) -> dict[str, float]:
    client = new_client(ClientOptions(kubeconfig=kubeconfig))
    options = ReflectorOptions(streaming_list=mode == "streaming", resync_period=None)
    lister_watcher = HttpListerWatcher(
        client.transport, PODS, NAMESPACE, ListOptions(label_selector=f"{LABEL}=lws")
    )
    informer = Informer("pods", lister_watcher, Store(POD_CODEC), options=options)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu, wall = time.process_time(), time.monotonic()
    task = asyncio.create_task(informer.run())
    await informer.wait_for_sync()
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    peak_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await client.close()
    synced_by = "stream" if informer.streamed_lists else "list"
    assert synced_by == ("stream" if mode == "streaming" else "list"), synced_by
    return {
        "objects": len(informer.store),
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_growth_mib": peak_growth / 1024,
    }


def measure(kubeconfig: str, mode: str) -> dict[str, float]:
    """One sync in a fresh interpreter, so that one measurement's heap does not carry into the next."""
    argv = [
        sys.executable,
        "-m",
        "benchmarks.runtime_initial_sync",
        "--child",
        mode,
        "--kubeconfig",
        kubeconfig,
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(sync_once(args.kubeconfig, args.child))))
        return
    workdir = Path(tempfile.mkdtemp(prefix="lws-bench-sync-"))
    cluster = LocalCluster(
        "bench-sync",
        workdir,
        build.ensure_binaries(),
        ClusterOptions(shape="apiserver", die_with_parent=True),
    )
    cluster.start()
    try:
        kubeconfig = str(cluster.kubeconfig)
        asyncio.run(fill(kubeconfig, args.pods))
        results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        for repeat in range(args.repeats):
            for mode in MODES if repeat % 2 == 0 else MODES[::-1]:
                results[mode].append(measure(kubeconfig, mode))
                print(f"  {mode:>9} r{repeat}: {results[mode][-1]}", flush=True)
        print(
            f"{args.pods} pods, Kubernetes {cluster.kubernetes_version}; medians (min-max) of {args.repeats}"
        )
        print("| mode | CPU s | wall s | peak RSS growth MiB |\n|---|---|---|---|")
        for mode, runs in results.items():
            cells = []
            for key in ("cpu_s", "wall_s", "peak_growth_mib"):
                values = [r[key] for r in runs]
                cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
            print(f"| {mode} | " + " | ".join(cells) + " |")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
