"""Throughput of the work queue + controller loop with a no-op reconcile (the runtime's own overhead).

    uv run python benchmarks/runtime_queue.py [--keys 10000] [--workers 4]

Adds N distinct keys (as a watch burst would), runs the controller until every key was reconciled
once, with controller-runtime metrics enabled, and prints keys per second and µs per key.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from prometheus_client import CollectorRegistry

from leaderworkerset.runtime.controller import Controller, Result
from leaderworkerset.runtime.metrics import new_runtime_metrics
from leaderworkerset.runtime.objects import ObjectKey


async def run(keys: int, workers: int) -> float:
    done = asyncio.Event()
    seen = 0

    async def reconcile(_key: ObjectKey) -> Result | None:
        nonlocal seen
        seen += 1
        if seen == keys:
            done.set()
        return None

    controller = Controller(
        "bench", reconcile, max_concurrent=workers, metrics=new_runtime_metrics(CollectorRegistry())
    )
    runner = asyncio.create_task(controller.run())
    started = time.perf_counter()
    for i in range(keys):
        controller.queue.add(ObjectKey("bench", f"lws-{i}"))
    await done.wait()
    elapsed = time.perf_counter() - started
    await controller.stop()
    await runner
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    elapsed = asyncio.run(run(args.keys, args.workers))
    print(f"{args.keys} keys, {args.workers} workers: {elapsed:.3f} s, "
          f"{args.keys / elapsed:,.0f} keys/s, {elapsed / args.keys * 1e6:.1f} µs/key")  # fmt: skip


if __name__ == "__main__":
    main()
