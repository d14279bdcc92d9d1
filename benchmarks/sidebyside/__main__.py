"""Run the side-by-side benchmark; see the package docstring and docs/benchmarks.md."""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import faulthandler
import json
import os
import platform
import re
import shutil
import signal
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_model
from benchmarks.sidebyside import audit, controllers, procstat, reconciles, summary
from benchmarks.sidebyside.scalepoints import SCALE_POINTS
from benchmarks.sidebyside.scenarios import (
    FILLER_NAMESPACE,
    FLOORS,
    MEMORY,
    POLL,
    SCENARIOS,
    Ctx,
    Scenario,
    clear_finalizers,
    delete_namespace,
    delete_workloads,
    fill,
    new_namespace,
    pods_gone,
)
from benchmarks.sidebyside.sizes import SIZES, Size
from tests.support import image

import leaderworkerset
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, tools
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.devcluster.nodes import NodeSpec
from leaderworkerset.runtime.client import ClientOptions, new_client

FLUSH = 1.5  # the audit log is written in batches of at most 1 s
NODE_PODS = int(NodeSpec(name="", index=0).pods)  # the pods one kwok node of the dev cluster takes
METRICS_WAIT = 10.0  # seconds a fresh manager gets to serve /metrics


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    model = cpu_model()
    mem = 0
    with contextlib.suppress(OSError):
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    return {"cpus": os.cpu_count(), "model": model, "memory_mib": mem, "python": platform.python_version(),
            "kernel": platform.release()}  # fmt: skip


async def measure(
    ctx: Ctx, log_: audit.AuditLog, scenario: Scenario, who: str, running: controllers.Running | None,
    sampler: procstat.Sampler | None, repeat: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """The scenario, then its follow-ups, in one namespace: one record per measured phase."""
    ns = f"{scenario.name.replace('_', '-')}-{who}-r{repeat}"
    log(f"  {scenario.name}/{who} r{repeat}: namespace {ns}")
    await asyncio.wait_for(new_namespace(ctx.api, ns), 60)
    records: list[dict[str, Any]] = []
    try:
        for phase in (scenario, *scenario.then):
            record = {"scenario": phase.name, "controller": who, "repeat": repeat,
                      "groups": phase.groups(ctx.size), "load_before": os.getloadavg()[0]}  # fmt: skip
            records.append(record)
            try:
                await measure_phase(ctx, log_, phase, ns, who, sampler, record, running)
            except Exception as err:  # one failed scenario is recorded, the run goes on
                record["ok"] = False
                record["error"] = f"{type(err).__name__}: {err}"
                log(f"  {phase.name}/{who}: FAILED {record['error']}")
                break
            cpu, peak, requests = (
                record.get(k, 0) for k in ("cpu_seconds", "peak_rss_mib", "requests_total")
            )
            log(f"  {phase.name}/{who} r{repeat}: {record['seconds']:.1f} s, cpu {cpu:.1f} s, "
                f"peak {peak:.0f} MiB, {requests} requests")  # fmt: skip
    finally:
        await clear_finalizers(ctx.api, ns)
        await delete_workloads(ctx.api, ns)
        await delete_namespace(ctx.api, ns, ctx.size.timeout, wait=False)
        if ctx.size.wait_cleanup:
            # The next scenario starts on a quiet cluster, with nothing of this one left to react to.
            await pods_gone(ctx.api, ctx.rest, ns, ctx.size.timeout)
            await delete_namespace(ctx.api, ns, ctx.size.timeout)
    return records


async def measure_phase(
    ctx: Ctx, log_: audit.AuditLog, phase: Scenario, ns: str, who: str, sampler: procstat.Sampler | None,
    record: dict[str, Any], running: controllers.Running | None = None,
) -> None:  # fmt: skip
    if phase.setup:
        await phase.setup(ctx, ns)
    counted0 = await _reconciles(running)
    offset, wall0, mono0 = log_.offset(), time.time(), time.monotonic()
    cpu0 = sampler.cpu() if sampler else 0.0
    if sampler:
        sampler.open_window()
    record |= await phase.act(ctx, ns)
    mono1, wall1 = time.monotonic(), time.time()
    record["seconds"] = mono1 - mono0
    record["load_after"] = os.getloadavg()[0]
    if sampler:
        record["cpu_seconds"] = sampler.cpu() - cpu0
        record["peak_rss_mib"], record["end_rss_mib"] = sampler.rss_between(mono0, mono1)
        record |= sampler.parts_at_peak(mono0, mono1)
        record["peak_rss_by_owner_mib"] = sampler.breakdown_mib()
        await asyncio.sleep(FLUSH)
        by_verb = log_.count(offset, wall0, wall1, controllers.username(who))
        record["requests"] = by_verb
        record["requests_total"] = sum(by_verb.values())
    counted1 = await _reconciles(running)
    if counted0 is not None and counted1 is not None:
        record |= reconciles.difference(counted0, counted1)
    record["ok"] = True


async def _reconciles(running: controllers.Running | None) -> dict[str, int] | None:
    """The controller's reconcile counters, or None without a controller or a readable /metrics
    (a just-started manager may serve its webhooks before its metrics: polled for a few seconds)."""
    if running is None:
        return None
    deadline = time.monotonic() + METRICS_WAIT
    while True:
        try:
            return reconciles.totals(await asyncio.to_thread(running.process.scrape))
        except OSError as err:
            if time.monotonic() >= deadline:
                log(f"  no reconcile counts from {running.controller}: {err}")
                return None
        await asyncio.sleep(POLL)


async def with_controller(
    ctx: Ctx, log_: audit.AuditLog, who: str, run: int, scenarios: list[Scenario], repeat: int
) -> list[dict[str, Any]]:
    running = await controllers.start(ctx.api, ctx.cluster, who, run, ctx.extra.get("profile_dir"))
    sampler = procstat.Sampler(running.pid)
    sampler.start()
    try:
        records: list[dict[str, Any]] = []
        for scenario in scenarios:
            records += await measure(ctx, log_, scenario, who, running, sampler, repeat)
        return records
    finally:
        sampler.stop()
        await controllers.stop(running)


async def memory_levels(
    ctx: Ctx,
    log_: audit.AuditLog,
    size: Size,
    who_runs: tuple[str, ...] = controllers.CONTROLLERS,
    save: Callable[[list[dict[str, Any]]], None] = lambda records: None,
) -> list[dict[str, Any]]:
    """RSS against cluster pods: half plain StatefulSet pods, half one LWS's, per level. `save` gets
    the records so far after every run, so that an interrupted pass keeps what it measured."""
    records: list[dict[str, Any]] = []
    for index, level in enumerate(size.memory_pods):
        log(f"memory level {level} cluster pods")
        await fill(ctx, level // 2)
        try:
            for repeat in range(size.memory_repeats):
                order = who_runs if (index + repeat) % 2 == 0 else who_runs[::-1]
                for who in order:
                    ctx.extra["level"] = level
                    records += await with_controller(
                        ctx, log_, who, 100 + 10 * index + repeat, [MEMORY], repeat
                    )
                    save(records)
        finally:
            await delete_namespace(ctx.api, FILLER_NAMESPACE, ctx.size.timeout, wait=False)
            await pods_gone(ctx.api, ctx.rest, FILLER_NAMESPACE, ctx.size.timeout)
            await delete_namespace(ctx.api, FILLER_NAMESPACE, ctx.size.timeout)
    return records


# Not compiled for the image's level: test data and what the manager never imports.
_NOT_THE_MANAGERS = re.compile(r"[/\\](test|tests|idlelib|lib2to3|site-packages)[/\\]")


def compile_bytecode() -> None:
    """Compile our package and its libraries once, as the image does, at the image's optimisation level
    (our managers run with it, tests/support/manager.py) and the plain one (the harness's): where
    PYTHONDONTWRITEBYTECODE is set, every manager start would otherwise compile them again (3.1 against
    1.1 CPU-seconds). CPython's install compiles its own library at every level; where it did not and
    the directory is writable, the image's level is filled in."""
    level = image.optimize_level()
    for path in sorted({sysconfig.get_paths()["purelib"], str(Path(leaderworkerset.__file__).parent)}):
        compileall.compile_dir(path, quiet=1, optimize=sorted({0, level}))
    compileall.compile_dir(sysconfig.get_paths()["stdlib"], quiet=2, optimize=[level], rx=_NOT_THE_MANAGERS)


async def run(
    size: Size,
    only: set[str] | None,
    results: Path,
    keep: bool,
    profile: Path | None = None,
    who_runs: tuple[str, ...] = controllers.CONTROLLERS,
    fresh_process: bool = False,
) -> Path:
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-bench-{size.name}-"))
    users = [controllers.username(x) for x in controllers.CONTROLLERS]
    options = ClusterOptions(shape="full", nodes=size.nodes, pod_ready_delay_ms=1000, die_with_parent=True,
                             apiserver_args=audit.apiserver_args(workdir / "audit", users))  # fmt: skip
    tools.ensure_tool(tools.UPSTREAM_LWS)
    await asyncio.to_thread(compile_bytecode)
    cluster = LocalCluster(f"bench-{size.name}", workdir, build.ensure_binaries(), options)
    log(f"starting a full cluster ({size.nodes} kwok nodes, pod-ready delay 1 s) in {workdir}")
    await asyncio.to_thread(cluster.start)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), qps=1000, burst=1000, timeout=60,
                                   field_manager="lws-bench"))  # fmt: skip
    started = time.time()
    mode = "-fresh" if fresh_process else ""
    out = results / f"{size.name}{mode}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    records: list[dict[str, Any]] = []
    try:
        await install_crds(api.lightkube)
        log("CRDs installed")
        await controllers.create_identities(api)
        log("controller identities created")
        ctx = Ctx(api, cluster, size, RestClient.from_kubeconfig(cluster.kubeconfig, timeout=120))
        if profile is not None:
            ctx.extra["profile_dir"] = profile
        log_ = audit.AuditLog(workdir / "audit" / "audit.log")
        # The scale points run only when named.
        scenarios = [s for s in (*SCENARIOS, *SCALE_POINTS) if s.name in only] if only else list(SCENARIOS)
        # One manager process for all scenarios (the continuous run: each inherits the previous
        # one's allocator high-water mark), or a fresh one per scenario (its follow-ups included).
        batches = [[s] for s in scenarios] if fresh_process else [scenarios]
        floors = [s for s in FLOORS if not only or s.name in only]
        for repeat in range(size.repeats):
            order = who_runs if repeat % 2 == 0 else who_runs[::-1]
            for floor in floors:
                records += await measure(ctx, log_, floor, "floor", None, None, repeat)
            for who in order if scenarios else ():
                log(f"repeat {repeat}: {who}")
                for index, batch in enumerate(batches):
                    records += await with_controller(ctx, log_, who, repeat * 100 + index, batch, repeat)
                write(out, size, started, records, partial=True)  # an interrupted run keeps its data
        if not only or "memory" in only:
            scenario_records = list(records)
            records += await memory_levels(
                ctx, log_, size, who_runs,
                lambda done: write(out, size, started, scenario_records + done, partial=True),
            )  # fmt: skip
    finally:
        await api.close()
        cluster.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    write(out, size, started, records)
    return out


def write(
    out: Path, size: Size, started: float, records: list[dict[str, Any]], partial: bool = False
) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "partial": partial,
        "size": asdict(size),
        "machine": machine(),
        "started": started,
        "finished": time.time(),
        "records": records,
    }
    document["summary"] = summary.summarise(records)
    out.write_text(json.dumps(document, indent=1))
    if not partial:
        log(f"results: {out}")
        print(summary.markdown(document["summary"]))


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description="ours vs upstream's LWS controller on one local cluster")
    parser.add_argument("--size", choices=sorted(SIZES), default="ci")
    parser.add_argument("--repeats", type=int, help="override the size's repeat count")
    parser.add_argument("--memory-repeats", type=int, help="override the memory levels' repeat count")
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--keep", action="store_true", help="keep the cluster work dir (logs, audit log)")
    parser.add_argument("--profile", type=Path, help="run ours under cProfile; stats and summaries go here")
    parser.add_argument("--levels", help="comma-separated memory levels (cluster pods) instead of the size's")
    parser.add_argument(
        "--controllers", default=",".join(controllers.CONTROLLERS), help="which of ours,upstream to run"
    )
    parser.add_argument(
        "--fresh-process",
        action="store_true",
        help="a fresh controller process per scenario (RSS without the previous ones' high-water mark)",
    )
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    if args.repeats:
        size = replace(size, repeats=args.repeats)
    if args.memory_repeats:
        size = replace(size, memory_repeats=args.memory_repeats)
    if args.levels:
        size = replace(size, memory_pods=tuple(int(level) for level in args.levels.split(",")))
    capacity = size.nodes * NODE_PODS
    if too_many := [level for level in size.memory_pods if level > capacity]:
        # Pods beyond it stay Pending and the level's LWS never becomes Available: it would time out.
        parser.error(
            f"memory levels {too_many} exceed the {size.name} cluster's {capacity} pods ({size.nodes} kwok "
            f"nodes x {NODE_PODS}); pick a size with more nodes (--size scale: {SIZES['scale'].nodes})"
        )
    who_runs = tuple(args.controllers.split(","))
    unknown = set(who_runs) - set(controllers.CONTROLLERS)
    if unknown:
        parser.error(f"--controllers: unknown {sorted(unknown)}, known: {','.join(controllers.CONTROLLERS)}")
    only = set(args.only.split(",")) if args.only else None
    profile = args.profile.resolve() if args.profile else None
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where a run hangs
    return asyncio.run(run(size, only, args.results, args.keep, profile, who_runs, args.fresh_process))


if __name__ == "__main__":
    main()
