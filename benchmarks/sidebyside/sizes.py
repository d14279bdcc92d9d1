"""Benchmark sizes, from the CI smoke run to the issue's full size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Size:
    name: str
    nodes: int
    repeats: int
    large_groups: int  # 1 LWS x G groups x 4 pods
    many_lws: int  # N LWS x 2 groups x 2 pods
    rolling_groups: int  # 1 LWS x G x 2, surge 2 / unavailable 2
    recreate_groups: int  # 1 LWS x G x 2; a worker restarts in half of them
    scale_groups: int  # G → 2G → G/2, size 2
    stall_groups: int  # rolling update, old workers terminate slowly
    stall_delay: float  # seconds a terminating worker pod lingers
    idle_seconds: float
    memory_pods: tuple[int, ...]  # cluster pod counts for RSS vs pods
    ds_replicas: int  # DisaggregatedSet: 2 roles x R groups x 2 pods
    timeout: float  # per goal
    settle: float = 10.0  # seconds after the memory level's LWS is Available before RSS counts as steady
    memory_repeats: int = 1  # filling the cluster is slow; one pass per level unless asked
    wait_cleanup: bool = True  # wait for each scenario's namespace to be gone before the next one
    grove_replicas: int = 500  # the `grove` scale point: 1 LWS x R groups x 2 pods
    x8_groups: int = 1000  # the `groups_x8` scale point: 1 LWS x G groups x 8 pods


SIZES = {
    s.name: s
    for s in (
        # CI smoke: every scenario completes; the numbers mean nothing.
        Size("smoke", 4, 1, 2, 2, 2, 2, 2, 2, 1.0, 2, (16,), 1, 180, settle=2, wait_cleanup=False),
        Size("tiny", 4, 1, 3, 3, 4, 4, 2, 4, 2.0, 5, (60,), 2, 300),
        Size("ci", 8, 1, 20, 10, 10, 10, 10, 10, 3.0, 15, (400,), 4, 600),
        Size("mid", 20, 3, 100, 20, 20, 20, 20, 50, 5.0, 20, (1000,), 5, 900),
        Size(
            "full",
            50,
            3,
            500,
            100,
            100,
            50,
            100,
            50,
            5.0,
            60,
            (2000, 5000, 10000),
            20,
            1800,
            memory_repeats=3,
        ),
        # The published scale points' cluster (scalepoints.py): 100 kwok nodes, one repeat.
        Size("scale", 100, 1, 500, 100, 100, 50, 100, 50, 5.0, 60, (2000,), 20, 3600),
    )
}
