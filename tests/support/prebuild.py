"""Build (or find in the cache) every binary and image a test tier uses, before pytest starts.

    python -m tests.support.prebuild [TIER...]     # unit, integration, e2e, chaos (default: all four)

A cold build takes minutes, more than a test's timeout (pyproject.toml) allows, so no test may be the
one that builds; and here its progress is on the screen. Each build is cached and locked
(devcluster/build.py, tools.py, realnodes/binaries.py), so this is a no-op once everything is built.

What runs when: the control plane first, then the real nodes' binaries, whose kubelet and kube-proxy
reuse the packages it compiled (Go's build cache), then the other Go tools. The manager image is
mostly downloads and unpacking (Debian packages, Python wheels) rather than compiling, so it is built
beside the Go builds instead of after them; so are the workload examples' images after it (JAX's for
the short journey; Ray's too when LWS_REAL_NODES asks for the workload suite, tests/e2e/realnodes).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from leaderworkerset.devcluster import build, tools

TIERS = ("unit", "integration", "e2e", "chaos")
# The Go tools each tier's tests start (devcluster/tools.py); unit tests start none.
TOOLS = {
    "unit": (),
    "integration": (tools.HELM, tools.ACTIONLINT),
    "e2e": (tools.UPSTREAM_LWS, tools.KUEUE, tools.METRICS_SERVER, tools.HELM),
    "chaos": (),
}
REAL_NODES = "e2e"  # the tier with tests on real nodes (tests/e2e/realnodes; root only)


def timed(what: str, step: Callable[[], Any]) -> Any:
    started = time.monotonic()
    result = step()
    print(f"[prebuild] {what}: {time.monotonic() - started:.0f}s", flush=True)
    return result


Step = tuple[str, Callable[[], Any]]


def plan(tiers: list[str], root: bool) -> tuple[list[Step], list[Step]]:
    """(the Go builds, in order; what is built beside them, in order) for `tiers`."""
    from tests.support import realnodes

    go: list[Step] = []
    beside: list[Step] = []
    if any(t != "unit" for t in tiers):
        go.append(("control plane", build.ensure_binaries))
    real = root and REAL_NODES in tiers
    if real:
        from leaderworkerset.devcluster.realnodes import binaries, workloads

        go.append(("real-node binaries", binaries.ensure_node_binaries))
        beside.append(("manager image", realnodes.manager_image_archive))
        # The workload examples' images: JAX's for the short journey, Ray's too for the workload suite.
        for runtime in ("jax", "ray") if "workloads" in realnodes.chosen_suites() else ("jax",):
            beside.append((f"{runtime} image", lambda runtime=runtime: workloads.ensure_archive(runtime)))
    wanted = {tool.name: tool for tier in tiers for tool in TOOLS[tier]}
    for tool in wanted.values():
        go.append((tool.name, lambda tool=tool: tools.ensure_tool(tool)))
    if real:  # images of binaries built above
        go.append(("probe image", realnodes.probe_v2_archive))
        go.append(("upstream's image", realnodes.upstream_image_archive))
    return go, beside


def main(argv: list[str]) -> int:
    tiers = argv or list(TIERS)
    unknown = sorted(set(tiers) - set(TIERS))
    if unknown:
        print(f"unknown tier(s) {', '.join(unknown)}; the tiers are {', '.join(TIERS)}", file=sys.stderr)
        return 2
    go, beside = plan(tiers, root=os.geteuid() == 0)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures: list[Future[Any]] = [
            pool.submit(lambda steps=steps: [timed(what, step) for what, step in steps])
            for steps in (beside, go)
        ]
        for future in futures:
            future.result()
    print(f"[prebuild] everything for {', '.join(tiers)} in {time.monotonic() - started:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
