"""Pods churning under `lws manager` on the full cluster.

One LeaderWorkerSet (RecreateGroupOnPodRestart) is brought up on kwok nodes; then containers of
random pods restart at a fixed rate (`devcluster.chaos.restart_container`, as a kubelet reports a
crash), so groups are recreated continuously. The manager runs as its own process; every two
seconds its RSS (/proc/<pid>/status) and its work-queue depth (`workqueue_depth` on its metrics
endpoint) are sampled. Checks, functional only: after the churn stops the queues drain and every
group is ready again; the RSS at the end stays within a generous multiple of the steady-state RSS
before the churn (a leak that grows with the number of restarts breaks it; ordinary allocator
growth does not). The samples are reported (docs/reliability.md, "Load").

CI size: 100 pods, 2 restarts/s for 60 s. Full size (`LWS_CHAOS_SIZE=full`, with
`LWS_TEST_NODES=10` so 2,000 pods fit on the kwok nodes): 2,000 pods, 5 restarts/s for 10 minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, PODS
from leaderworkerset.webhooks import certs
from tests.chaos import sizes
from tests.chaos.input import report
from tests.support import builders as b
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

SIZE = 4
REPLICAS = sizes.pick(ci=25, full=500)  # pods = REPLICAS * SIZE
RATE = sizes.pick(ci=2.0, full=5.0)  # container restarts per second
CHURN_SECONDS = sizes.pick(ci=60.0, full=600.0)
SAMPLE_SECONDS = 2.0
# Bring-up and drain on a shared 2-core machine: kwok, the scheduler and the manager compete.
SETTLE_TIMEOUT = sizes.pick(ci=LONG_TIMEOUT * 3, full=3600.0)
# A real leak grows with the number of restarts; allocator arenas and caches do not.
RSS_BOUND = 4.0
NAME = "churn"
_SERIES = r"^{name}\{{[^}}]*\}}\s+([0-9.e+]+)$"
_DEPTH = re.compile(_SERIES.format(name="workqueue_depth"), re.MULTILINE)
_ADDS = re.compile(_SERIES.format(name="workqueue_adds_total"), re.MULTILINE)


@dataclass
class Sample:
    seconds: float
    phase: str
    rss_mib: float
    queue_depth: int | None  # None: the metrics endpoint did not answer within its timeout
    queue_adds: int | None  # keys added to the work queues since the manager started


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    restarts: int = 0
    missed: int = 0  # the chosen pod was gone or not started yet (its group was being recreated)
    phase: str = "steady"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def queues(metrics_port: int) -> tuple[int, int] | None:
    """(depth, adds) summed over the manager's work queues, from its metrics endpoint; None when
    the endpoint does not answer in time (the manager's event loop is saturated)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except (TimeoutError, urllib.error.URLError):
        return None
    depths, adds = _DEPTH.findall(text), _ADDS.findall(text)
    assert depths, "no workqueue_depth series on /metrics"
    assert adds, "no workqueue_adds_total series on /metrics"
    return int(sum(float(v) for v in depths)), int(sum(float(v) for v in adds))


@pytest.fixture(scope="module")
async def load_api(full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(ClientOptions(kubeconfig=str(full_cluster.kubeconfig), qps=200, burst=400))
    yield client
    await client.close()


@pytest.fixture(scope="module")
async def manager(
    full_cluster: LocalCluster, full_kube: object, load_api: KubeClient
) -> AsyncIterator[ManagerProcess]:
    await install_crds(full_kube)  # type: ignore[arg-type]
    process = ManagerProcess(full_cluster, name="lws-manager-load")
    await process.start()
    yield process
    await process.stop()
    # The manager registered cluster-wide URL webhook configurations with failurePolicy Fail:
    # they must not outlive it for the tests that share this cluster.
    for ref, name in (
        (certs.MUTATING_CONFIGURATIONS, c.MUTATING_WEBHOOK_CONFIGURATION_NAME),
        (certs.VALIDATING_CONFIGURATIONS, c.VALIDATING_WEBHOOK_CONFIGURATION_NAME),
    ):
        with contextlib.suppress(ApiStatusError):
            await load_api.delete(ref, None, name)


async def _node_capacity(api: KubeClient) -> int:
    nodes = await api.list(NODES)
    return sum(int((n.get("status") or {}).get("allocatable", {}).get("pods", "0")) for n in nodes)


async def _all_groups_ready(api: KubeClient, namespace: str) -> bool:
    lws = await api.get(LEADERWORKERSETS, namespace, NAME)
    status = lws.get("status") or {}
    ready = status.get("readyReplicas") == REPLICAS
    assert ready, f"{status.get('readyReplicas')} of {REPLICAS} groups ready"
    return ready


async def _started_pods(api: KubeClient, namespace: str) -> list[str]:
    pods = await api.list(PODS, namespace, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    return [
        p["metadata"]["name"]
        for p in pods
        if (p.get("status") or {}).get("containerStatuses") and not p["metadata"].get("deletionTimestamp")
    ]


async def _sample(run: Run, manager: ManagerProcess, started: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        scraped = await asyncio.to_thread(queues, manager.metrics_port)
        depth, adds = scraped if scraped is not None else (None, None)
        run.samples.append(Sample(time.monotonic() - started, run.phase, rss_mib(manager.pid), depth, adds))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)


async def _churn(run: Run, api: KubeClient, rest: RestClient, namespace: str) -> None:
    rng = random.Random(12)  # deterministic choice of pods, given the same pod names
    pods = await _started_pods(api, namespace)
    refreshed = time.monotonic()
    in_flight: set[asyncio.Task[None]] = set()
    deadline = time.monotonic() + CHURN_SECONDS
    next_at = time.monotonic()

    async def restart(pod: str) -> None:
        try:
            await asyncio.to_thread(chaos.restart_container, rest, namespace, pod)
            run.restarts += 1
        except Exception:  # gone, replaced, not started: its group is being recreated
            run.missed += 1

    while time.monotonic() < deadline:
        if time.monotonic() - refreshed > 5:
            pods, refreshed = await _started_pods(api, namespace), time.monotonic()
        if pods and len(in_flight) < 20:
            task = asyncio.create_task(restart(rng.choice(sorted(pods))))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        else:
            run.missed += 1  # the cluster is too slow for the rate: counted, not queued up
        next_at += 1 / RATE
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    await asyncio.gather(*in_flight)


async def test_churning_pods_drain_the_queue_and_keep_memory_flat(
    full_cluster: LocalCluster, load_api: KubeClient, manager: ManagerProcess, full_namespace: str
) -> None:
    capacity = await _node_capacity(load_api)
    assert capacity >= REPLICAS * SIZE, (
        f"{REPLICAS * SIZE} pods do not fit on the nodes ({capacity} pod slots): set LWS_TEST_NODES"
    )
    body = b.LeaderWorkerSetBuilder(full_namespace, NAME).replicas(REPLICAS).size(SIZE).obj()
    body["metadata"].pop("uid", None)
    await load_api.create(LEADERWORKERSETS, body)
    await eventually(lambda: _all_groups_ready(load_api, full_namespace), timeout=SETTLE_TIMEOUT, interval=2)

    run = Run()
    drain_seconds: float | None = None
    stop = asyncio.Event()
    started = time.monotonic()
    sampler = asyncio.create_task(_sample(run, manager, started, stop))
    try:
        await asyncio.sleep(SAMPLE_SECONDS * 3)  # a few steady-state samples before the churn
        run.phase = "churn"
        await _churn(run, load_api, RestClient.from_kubeconfig(full_cluster.kubeconfig), full_namespace)
        run.phase = "drain"
        churn_ended = time.monotonic()

        async def drained() -> bool:
            scraped = await asyncio.to_thread(queues, manager.metrics_port)
            assert scraped is not None, "the metrics endpoint did not answer"
            assert scraped[0] == 0, f"work queues hold {scraped[0]} keys"
            return await _all_groups_ready(load_api, full_namespace)

        await eventually(drained, timeout=SETTLE_TIMEOUT, interval=2)
        drain_seconds = time.monotonic() - churn_ended
        run.phase = "after"
        await asyncio.sleep(SAMPLE_SECONDS * 2)
    finally:
        stop.set()
        await sampler
        _report(run, drain_seconds)  # also when the drain failed: the samples show how far it got

    assert run.restarts > 0
    adds = [s.queue_adds for s in run.samples if s.queue_adds is not None]
    # The churn reached the controllers (and the sampler read real series).
    assert adds[-1] > adds[0]
    steady = max(s.rss_mib for s in run.samples if s.phase == "steady")
    final = run.samples[-1].rss_mib
    assert final <= RSS_BOUND * steady, f"RSS grew from {steady:.0f} MiB to {final:.0f} MiB"


def _report(run: Run, drain_seconds: float | None) -> None:
    if not run.samples:
        return
    depths = [s.queue_depth for s in run.samples if s.queue_depth is not None]
    adds = [s.queue_adds for s in run.samples if s.queue_adds is not None]
    steady = [s.rss_mib for s in run.samples if s.phase == "steady"] or [run.samples[0].rss_mib]
    report.emit(
        "load",
        {
            "pods": REPLICAS * SIZE,
            "rate per second": RATE,
            "churn seconds": CHURN_SECONDS,
            "container restarts": run.restarts,
            "restarts missed (pod gone or cluster behind)": run.missed,
            "drain seconds": None if drain_seconds is None else round(drain_seconds, 1),
            "rss MiB steady": round(max(steady), 1),
            "rss MiB peak": round(max(s.rss_mib for s in run.samples), 1),
            "rss MiB final": round(run.samples[-1].rss_mib, 1),
            "queue depth peak": max(depths, default=None),
            "queue adds during the run": adds[-1] - adds[0] if adds else None,
            "metrics scrapes unanswered in 10 s": sum(s.queue_depth is None for s in run.samples),
            "samples (seconds, phase, RSS MiB, queue depth, queue adds)": [
                [round(s.seconds), s.phase, round(s.rss_mib, 1), s.queue_depth, s.queue_adds]
                for s in run.samples
            ],
        },
    )
