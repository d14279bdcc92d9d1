"""Pod-webhook latency through the real kube-apiserver, at a fixed create rate (loopback only).

    uv run python -m benchmarks.webhook_latency [--rate 100] [--count 3000] [--warmup 200]
                                                [--max-seconds 180] [--kubeconfig K]
                                                [--servers ours,upstream] [--repeats 1]
                                                [--json OUT]

Starts an apiserver-shape local cluster (etcd + kube-apiserver; or uses --kubeconfig), runs our
webhook server in a child process (its own event loop, as in `lws manager`) with URL webhook
configurations scoped to a fresh namespace, then creates pods open-loop at --rate per second:

1. baseline: pods without the `leaderworkerset.sigs.k8s.io/name` label (the objectSelector skips
   our webhooks), for the API server's own create latency;
2. LWS pods: leader pods with the name label, so each create calls mpod.kb.io and vpod.kb.io;
3. the same mutating AdmissionReview posted straight to our server (TLS, keep-alive).

Reported: the handler time measured server-side by the server's
`controller_runtime_webhook_latency_seconds` histogram (fine buckets here, quantiles interpolated
as Prometheus' histogram_quantile does), and the client-observed end-to-end create latency, p50 and
p99 each; then the CPU time our server process spends per review, and (when the benchmark started
the cluster) the CPU time kube-apiserver + etcd spend per pod create with and without the webhooks.
Bounded by --count pods per phase and --max-seconds per phase; warm-up creates are not counted.
Everything stays on 127.0.0.1; the cluster we started and the namespace are removed.

`--servers ours,upstream` (the default when the benchmark starts its own cluster) measures upstream's
webhook server the same way, after ours, on the same cluster: upstream's Go manager
(sigs.k8s.io/lws v0.9.0, `devcluster/tools.py`) with its webhooks on, serving a certificate for
127.0.0.1 behind the same scoped URL configurations. Its process also runs its controllers (upstream
has no webhooks-only mode; with no LeaderWorkerSet in the cluster they only keep their caches), and
its latency histogram has decade buckets (1 ms, 10 ms), too coarse for quantiles: its handler time is
what the direct posts measure. CPU per review is the process's CPU time over the reviews sent.

`--repeats N` measures every server N times on the same cluster, reversing the servers' order on
every other repeat (ours, upstream; upstream, ours; ...) so that neither always runs on the warmer
cluster. The JSON keeps each repeat under "repeats"; "servers" then holds the median of every figure
across the repeats, and "spread" its lowest and highest value.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import multiprocessing as mp
import os
import platform
import shutil
import ssl
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
from benchmarks.machine import cpu_model
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import NAMESPACES, PODS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.configurations import render_for_url
from leaderworkerset.webhooks.metrics import WebhookMetrics
from leaderworkerset.webhooks.server import WebhookServer

Obj = dict[str, Any]
POD_PATHS = (c.WEBHOOK_PATH_MUTATE_POD, c.WEBHOOK_PATH_VALIDATE_POD)
SELECTOR_LABEL = "bench.leaderworkerset.test/namespace"
# 25 µs steps to 2 ms, 250 µs steps to 20 ms, then coarse: handler times are sub-millisecond.
BUCKETS = (
    *(i * 25e-6 for i in range(1, 81)),
    *(2e-3 + i * 250e-6 for i in range(1, 73)),
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


# ---- the webhook server, in a child process ------------------------------------------------------


def fine_metrics() -> WebhookMetrics:
    registry = CollectorRegistry()
    return WebhookMetrics(
        latency=Histogram(
            "controller_runtime_webhook_latency_seconds", "", ("webhook",), buckets=BUCKETS, registry=registry
        ),
        requests=Counter(
            "controller_runtime_webhook_requests_total", "", ("webhook", "code"), registry=registry
        ),
        in_flight=Gauge("controller_runtime_webhook_requests_in_flight", "", ("webhook",), registry=registry),
    )


def histogram_buckets(metrics: WebhookMetrics) -> dict[str, list[tuple[float, float]]]:
    """Cumulative (le, count) per webhook path."""
    result: dict[str, list[tuple[float, float]]] = {}
    for family in metrics.latency.collect():
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                result.setdefault(sample.labels["webhook"], []).append(
                    (float(sample.labels["le"]), sample.value)
                )
    return result


@dataclass(frozen=True)
class Snapshot:
    """The server's latency buckets per path and the CPU time its process has used."""

    buckets: dict[str, list[tuple[float, float]]]
    cpu_seconds: float

    def requests(self, path: str) -> float:
        return self.buckets[path][-1][1] if path in self.buckets else 0.0

    def all_requests(self) -> float:
        return sum(self.requests(path) for path in self.buckets)


def serve_in_child(cert_dir: str, conn: Connection) -> None:
    async def main() -> None:
        metrics = fine_metrics()
        server = WebhookServer(Path(cert_dir), host="127.0.0.1", port=0, metrics=metrics)
        await server.start()
        conn.send(server.port)
        loop = asyncio.get_running_loop()
        while (command := await loop.run_in_executor(None, conn.recv)) != "stop":
            assert command == "snapshot"
            conn.send((histogram_buckets(metrics), time.process_time()))  # plain data across processes
        await server.stop()

    asyncio.run(main())


@dataclass
class ChildServer:
    process: Any
    conn: Connection
    port: int

    def snapshot(self) -> Snapshot:
        self.conn.send("snapshot")
        buckets, cpu_seconds = self.conn.recv()
        return Snapshot(buckets, cpu_seconds)

    def stop(self) -> None:
        self.conn.send("stop")
        self.process.join(30)


@contextlib.contextmanager
def child_server(cert_dir: Path) -> Any:
    context = mp.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=serve_in_child, args=(str(cert_dir), child), daemon=True)
    process.start()
    server = ChildServer(process, parent, parent.recv())
    try:
        yield server
    finally:
        server.stop()


def quantile(q: float, before: list[tuple[float, float]], after: list[tuple[float, float]]) -> float:
    """histogram_quantile over the bucket increase between two snapshots (linear within a bucket)."""
    base = dict(before)
    buckets = [(le, count - base.get(le, 0.0)) for le, count in after]
    total = buckets[-1][1]
    if total == 0:
        return math.nan
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return lower_bound
            return lower_bound + (le - lower_bound) * (rank - lower_count) / max(count - lower_count, 1e-12)
        lower_bound, lower_count = le, count
    return lower_bound


# ---- load ---------------------------------------------------------------------------------------


def pod(namespace: str, name: str, lws: bool) -> Obj:
    metadata: Obj = {"name": name, "namespace": namespace, "labels": {"app": "bench"}}
    if lws:
        metadata["labels"] |= {c.LABEL_SET_NAME: "bench", c.LABEL_WORKER_INDEX: "0"}
        metadata["annotations"] = {c.ANNOTATION_SIZE: "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "m", "image": "x"}]},
    }


@dataclass
class Phase:
    latencies: list[float]
    errors: int
    seconds: float

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


async def open_loop(
    client: KubeClient, make: Callable[[int], Obj], count: int, rate: float, max_seconds: float
) -> Phase:
    """Create pods through the API server, one every 1/rate seconds."""

    async def create(index: int) -> bool:
        try:
            await client.create(PODS, make(index))
        except ApiStatusError:
            return False
        return True

    return await paced(create, count, rate, max_seconds)


async def direct(port: int, ca: bytes, namespace: str, count: int, rate: float, max_seconds: float) -> Phase:
    """AdmissionReviews posted straight to the server (TLS, keep-alive), one every 1/rate seconds:
    the server's latency without the API server in the path."""
    context = ssl.create_default_context(cadata=ca.decode())
    url = f"https://127.0.0.1:{port}{c.WEBHOOK_PATH_MUTATE_POD}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=32)) as session:

        async def post(index: int) -> bool:
            request = {
                "uid": str(index),
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": namespace,
                "operation": "CREATE",
                "userInfo": {"username": "bench"},
                "object": pod(namespace, f"d-{index}", True),
            }
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
            async with session.post(url, json=review) as response:
                answer = await response.json(content_type=None)  # upstream answers text/plain
            return bool(answer["response"]["allowed"])

        return await paced(post, count, rate, max_seconds)


async def paced(call: Callable[[int], Awaitable[bool]], count: int, rate: float, max_seconds: float) -> Phase:
    """Start one call every 1/rate seconds regardless of completions (open loop, so a slow call
    does not hide the ones queued behind it); stop scheduling at `count` or `max_seconds`."""
    latencies: list[float] = []
    errors = 0

    async def create(index: int) -> None:
        nonlocal errors
        started = time.perf_counter()
        if await call(index):
            latencies.append(time.perf_counter() - started)
        else:
            errors += 1

    tasks = []
    begin = time.perf_counter()
    for index in range(count):
        due = begin + index / rate
        if due - begin > max_seconds:
            break
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(create(index)))
    await asyncio.gather(*tasks)
    return Phase(latencies, errors, time.perf_counter() - begin)


# ---- wiring -------------------------------------------------------------------------------------


@dataclass
class Target:
    """The cluster under the benchmark: a client, the control plane's pids and, when we started it, the
    LocalCluster (upstream's manager is attached to it)."""

    client: KubeClient
    control_plane: list[int]
    cluster: LocalCluster | None


@contextlib.asynccontextmanager
async def cluster_client(kubeconfig: str | None) -> AsyncIterator[Target]:
    cluster = None
    pids: list[int] = []
    if kubeconfig is None:
        workdir = Path(tempfile.mkdtemp(prefix="lws-bench-webhook-"))
        cluster = LocalCluster("bench-webhook", workdir, build.ensure_binaries(),
                               ClusterOptions(shape="apiserver", die_with_parent=True))  # fmt: skip
        cluster.start()
        kubeconfig = str(cluster.kubeconfig)
        pids = [cluster.state.pids["kube-apiserver"], cluster.state.pids["etcd"]]
    client = new_client(ClientOptions(kubeconfig=kubeconfig, qps=10_000, burst=10_000, timeout=60))
    try:
        yield Target(client, pids, cluster)
    finally:
        await client.close()
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.workdir, ignore_errors=True)


@dataclass
class UpstreamServer:
    """Upstream's manager process; only its CPU time is read (see the module docstring)."""

    process: Any

    @property
    def port(self) -> int:
        return int(self.process.webhook_port)

    def snapshot(self) -> Snapshot:
        return Snapshot({}, cpu_seconds([self.process.pid]))


@contextlib.asynccontextmanager
async def upstream_server(target: Target) -> AsyncIterator[tuple[UpstreamServer, bytes]]:
    from benchmarks.sidebyside.controllers import UpstreamManager

    from leaderworkerset.crd.install import install_crds
    from leaderworkerset.devcluster import tools

    assert target.cluster is not None, "upstream's server needs the cluster this benchmark starts"
    await install_crds(target.client.lightkube)  # upstream's manager starts its controllers' caches
    binary = tools.ensure_tool(tools.UPSTREAM_LWS)
    manager = UpstreamManager(target.cluster, binary, "upstream-webhooks", target.cluster.kubeconfig)
    await manager.start()
    try:
        yield UpstreamServer(manager), manager.artifacts.ca_cert
    finally:
        await manager.stop()


REFS = {"MutatingWebhookConfiguration": certs.MUTATING_CONFIGURATIONS}
REFS["ValidatingWebhookConfiguration"] = certs.VALIDATING_CONFIGURATIONS


@contextlib.asynccontextmanager
async def scoped_webhooks(client: KubeClient, namespace: str, port: int, ca: bytes) -> AsyncIterator[None]:
    configurations = render_for_url("127.0.0.1", port, ca)
    for configuration in configurations:
        configuration["metadata"]["name"] += f"-bench-{namespace}"
        for webhook in configuration["webhooks"]:
            webhook["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: namespace}}
        await client.create(REFS[configuration["kind"]], configuration)
    try:
        yield
    finally:
        for configuration in configurations:
            with contextlib.suppress(ApiStatusError):
                await client.delete(REFS[configuration["kind"]], None, configuration["metadata"]["name"])


async def wait_until_called(client: KubeClient, namespace: str) -> None:
    for attempt in range(300):
        created = await client.create(PODS, pod(namespace, f"probe-{attempt}", lws=True))
        if c.LABEL_GROUP_KEY in created["metadata"]["labels"]:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("the API server never called the webhooks")


def machine() -> str:
    model = cpu_model()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, load average {load}"


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="lws-bench-certs-") as directory:
        await measure(args, Path(directory))


async def measure(args: argparse.Namespace, cert_dir: Path) -> None:
    artifacts = certissue.generate(certs.CertConfig(ip_addresses=("127.0.0.1",)), certs.utc_now())
    certs.write_cert_dir(cert_dir, artifacts)
    servers = args.servers.split(",") if args.servers else ["ours", "upstream"][: 1 if args.kubeconfig else 2]
    print(f"machine: {machine()}")
    print(f"rate {args.rate}/s, {args.count} pods per phase after {args.warmup} warm-up creates")
    results: dict[str, Any] = {"machine": machine(), "rate": args.rate, "count": args.count, "servers": {}}
    repeats: list[dict[str, Any]] = []
    async with cluster_client(args.kubeconfig) as target:
        for repeat in range(args.repeats):
            repeats.append({})
            print(f"\n# repeat {repeat + 1} of {args.repeats}")
            for name in repeat_order(servers, repeat):
                repeats[-1][name] = await measure_server(args, target, cert_dir, artifacts.ca_cert, name)
    results["servers"] = {name: median_leaves([r[name] for r in repeats]) for name in servers}
    if args.repeats > 1:
        results["repeats"] = repeats
        results["spread"] = {name: spread_leaves([r[name] for r in repeats]) for name in servers}
    if len(results["servers"]) == 2:
        print(side_by_side(results["servers"]))
    if args.json:
        await asyncio.to_thread(Path(args.json).write_text, json.dumps(results, indent=1))


def repeat_order(servers: list[str], repeat: int) -> list[str]:
    """The servers in the given order on even repeats and reversed on odd ones."""
    return list(servers) if repeat % 2 == 0 else list(reversed(servers))


def across_repeats(runs: list[Any], combine: Callable[[list[float]], Any]) -> Any:
    """One tree of the same shape as every run, each number replaced by `combine` of that number across
    the runs; text and other leaves are taken from the first run."""
    first = runs[0]
    if isinstance(first, dict):
        return {key: across_repeats([run[key] for run in runs], combine) for key in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return combine(runs)
    return first


def median_leaves(runs: list[Any]) -> Any:
    return across_repeats(runs, statistics.median)


def spread_leaves(runs: list[Any]) -> Any:
    """Each number becomes [lowest, highest] across the runs."""
    return across_repeats(runs, lambda values: [min(values), max(values)])


async def measure_server(
    args: argparse.Namespace, target: Target, cert_dir: Path, ca_cert: bytes, name: str
) -> dict[str, Any]:
    namespace = f"bench-webhook-{name}-{uuid.uuid4().hex[:6]}"
    body = {"metadata": {"name": namespace, "labels": {SELECTOR_LABEL: namespace}}}
    await target.client.create(NAMESPACES, body)
    try:
        async with contextlib.AsyncExitStack() as stack:
            server, ca = await stack.enter_async_context(serving(name, cert_dir, ca_cert, target))
            await stack.enter_async_context(scoped_webhooks(target.client, namespace, server.port, ca))
            await wait_until_called(target.client, namespace)
            return await report(args, target, namespace, server, ca, name)
    finally:
        await target.client.delete(NAMESPACES, None, namespace)


@contextlib.asynccontextmanager
async def serving(name: str, cert_dir: Path, ca: bytes, target: Target) -> AsyncIterator[tuple[Any, bytes]]:
    if name == "ours":
        with child_server(cert_dir) as server:
            yield server, ca
    elif name == "upstream":
        async with upstream_server(target) as pair:
            yield pair
    else:
        raise SystemExit(f"--servers: unknown server {name!r} (ours, upstream)")


def side_by_side(servers: dict[str, Any]) -> str:
    lines = [
        "| measurement (ms) | ours p50 | upstream p50 | ours p99 | upstream p99 |",
        "|---|---|---|---|---|",
    ]
    ours, upstream = servers["ours"], servers["upstream"]
    for key in ours["phases"]:
        a, b = ours["phases"][key], upstream["phases"][key]
        lines.append(
            f"| {key} | {a['p50_ms']:.2f} | {b['p50_ms']:.2f} | {a['p99_ms']:.2f} | {b['p99_ms']:.2f} |"
        )
    for key in ("added_p50_ms", "added_p99_ms", "cpu_ms_per_review_apiserver", "cpu_ms_per_review_direct"):
        lines.append(f"| {key} | {ours[key]:.2f} | {upstream[key]:.2f} | | |")
    return "\n".join(lines)


async def report(
    args: argparse.Namespace, target: Target, namespace: str, server: Any, ca: bytes, name: str
) -> dict[str, Any]:
    client, control_plane = target.client, target.control_plane

    def make(prefix: str, lws: bool) -> Callable[[int], Obj]:
        return lambda i: pod(namespace, f"{prefix}-{i}", lws)

    print(f"\n## {name}'s webhook server")
    await open_loop(client, make("warm", True), args.warmup, args.rate, args.max_seconds)
    cpu = [cpu_seconds(control_plane)]
    baseline = await open_loop(client, make("plain", False), args.count, args.rate, args.max_seconds)
    cpu.append(cpu_seconds(control_plane))
    before = server.snapshot()
    lws = await open_loop(client, make("bench", True), args.count, args.rate, args.max_seconds)
    after = server.snapshot()
    cpu.append(cpu_seconds(control_plane))
    alone = await direct(server.port, ca, namespace, args.count, args.rate, args.max_seconds)
    end = server.snapshot()

    print("| measurement | p50 | p99 | mean | n | errors | achieved rate |")
    print("|---|---|---|---|---|---|---|")
    phases = (
        ("pod create, no webhook called (baseline)", baseline),
        ("pod create through mpod + vpod", lws),
        ("mpod review posted to the server directly", alone),
    )
    out: dict[str, Any] = {"phases": {}}
    for label, phase in phases:
        mean = statistics.fmean(phase.latencies) if phase.latencies else math.nan
        n = len(phase.latencies)
        print(f"| {label} | {ms(phase.percentile(0.5))} | {ms(phase.percentile(0.99))} | {ms(mean)} | {n} | "
              f"{phase.errors} | {(n + phase.errors) / phase.seconds:.0f}/s |")  # fmt: skip
        out["phases"][label] = {"p50_ms": phase.percentile(0.5) * 1e3, "p99_ms": phase.percentile(0.99) * 1e3,
                                "mean_ms": mean * 1e3, "n": n, "errors": phase.errors}  # fmt: skip
    for path in POD_PATHS:
        if path not in after.buckets:
            continue
        counted = after.requests(path) - before.requests(path)
        p50, p99 = (quantile(q, before.buckets.get(path, []), after.buckets[path]) for q in (0.5, 0.99))
        print(f"| handler {path} (server-side) | {ms(p50)} | {ms(p99)} | | {counted:.0f} | | |")
        out[f"handler {path}"] = {"p50_ms": p50 * 1e3, "p99_ms": p99 * 1e3, "n": counted}
    out["added_p50_ms"] = (lws.percentile(0.5) - baseline.percentile(0.5)) * 1e3
    out["added_p99_ms"] = (lws.percentile(0.99) - baseline.percentile(0.99)) * 1e3
    reviews = {
        "apiserver": 2 * (len(lws.latencies) + lws.errors),
        "direct": len(alone.latencies) + alone.errors,
    }
    for key, start, stop in (("apiserver", before, after), ("direct", after, end)):
        per_review = (stop.cpu_seconds - start.cpu_seconds) / max(1, reviews[key])
        out[f"cpu_ms_per_review_{key}"] = per_review * 1e3
        how = "through the API server" if key == "apiserver" else "posted directly"
        print(f"server process CPU per review, {how}: {ms(per_review)}")
    if control_plane:
        plain, hooked = (
            (cpu[i + 1] - cpu[i]) / max(1, len(p.latencies)) for i, p in enumerate((baseline, lws))
        )
        print(f"kube-apiserver + etcd CPU per pod create: baseline {ms(plain)}, with webhooks {ms(hooked)}")
        out["control_plane_cpu_ms_per_create"] = {"baseline": plain * 1e3, "webhooks": hooked * 1e3}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0, help="pod creates per second")
    parser.add_argument("--count", type=int, default=3000, help="pods per measured phase")
    parser.add_argument("--warmup", type=int, default=200, help="uncounted creates first")
    parser.add_argument("--max-seconds", type=float, default=180.0, help="time bound per phase")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting one (ours only)")
    parser.add_argument("--servers", help="ours, upstream or both comma-separated (default: both)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="measure each server this many times, order alternating"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats: must be at least 1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
