"""Time from a new image to every group updated, in place (`update-strategy: InPlaceIfPossible`)
against the normal rollout, on a local cluster with two real nodes (not a pass/fail test).

    flock /tmp/lws-realnodes.lock uv run python -m benchmarks.in_place_update [--groups 2] [--runs 1]

Starts the real-node cluster of docs/real-nodes.md (manager installed by its chart from the image of
this tree, the probe image v1 and v2 on both nodes), then per run and mode creates a probe set of
--groups groups of --size, waits until Available, sets the image to v2 and waits until every pod runs
v2 and every group is updated and Ready (tests/support/inplacerun.py). Reported per run: seconds, and
pods rescheduled (pods of the set with a new UID afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid

from tests.support import realnodes
from tests.support.inplacerun import update_probe_image
from tests.support.wait import LONG_TIMEOUT, eventually

from leaderworkerset.runtime.client import ClientOptions, new_client
from leaderworkerset.runtime.resources import NAMESPACES


async def _run(args: argparse.Namespace) -> list[dict[str, object]]:
    cluster = realnodes.benchmark_cluster(
        "inplace", 2, (realnodes.manager_image_archive(), realnodes.probe_v2_archive())
    )
    await asyncio.to_thread(cluster.start)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-bench"))
    results: list[dict[str, object]] = []
    try:
        realnodes.helm_install(cluster)
        await eventually(lambda: realnodes.manager_available(api), timeout=LONG_TIMEOUT * 2)
        for run in range(args.runs):
            for mode, in_place in (("in place", True), ("rollout", False)):
                ns = f"bench-{uuid.uuid4().hex[:6]}"
                await api.create(
                    NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
                update = await update_probe_image(
                    api, ns, "probe", replicas=args.groups, size=args.size, in_place=in_place
                )
                results.append(
                    {
                        "run": run,
                        "mode": mode,
                        "groups": args.groups,
                        "size": args.size,
                        "seconds": round(update.seconds, 1),
                        "pods_rescheduled": update.rescheduled,
                        "pods": len(update.after),
                    }
                )
                print(json.dumps(results[-1]), flush=True)
                await api.delete(NAMESPACES, None, ns)
    finally:
        await api.close()
        await asyncio.to_thread(cluster.stop)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--size", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    asyncio.run(_run(parser.parse_args()))


if __name__ == "__main__":
    main()
