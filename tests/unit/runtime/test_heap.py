"""The heap trimmer: the C heap's free pages go back to the kernel once the RSS has grown, and an
idle manager never loads what a trim needs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.heap import HeapTrimmer, new_heap_metrics, trim_due

MIB = 2**20


def test_a_trim_is_due_only_after_the_rss_grew_by_the_step() -> None:
    cases = [
        (100 * MIB, 100 * MIB, False),
        (107 * MIB, 100 * MIB, False),
        (108 * MIB, 100 * MIB, True),
        (90 * MIB, 100 * MIB, False),
    ]
    for resident, after_last_trim, due in cases:
        assert trim_due(resident, after_last_trim, 8 * MIB) is due, (resident, after_last_trim)
    assert len(cases) == 4


class ScriptedProcess:
    """An RSS that follows a script, and a trim that takes `releases` off it."""

    def __init__(self, rss: list[int], releases: int) -> None:
        self.rss = rss
        self.now = rss[0]
        self.releases = releases
        self.loads = 0

    def read(self) -> int:
        return self.now

    def load(self) -> Callable[[], object]:
        self.loads += 1

        def trim() -> None:
            self.now -= self.releases

        return trim


async def turns(trimmer: HeapTrimmer, clock: FakeClock, process: ScriptedProcess) -> None:
    """Feed the trimmer one scripted RSS per interval; the loop's turns let it read each one."""
    for rss in process.rss[1:]:
        process.now = rss
        clock.advance(trimmer.interval)
        for _ in range(5):
            await asyncio.sleep(0)


def counted(registry: CollectorRegistry) -> tuple[float | None, float | None]:
    """What /metrics says: the trims made and the bytes they gave back."""
    return registry.get_sample_value("lws_heap_trims_total"), registry.get_sample_value(
        "lws_heap_trimmed_bytes_total"
    )


async def test_the_trimmer_trims_after_growth_and_never_loads_the_library_while_idle() -> None:
    clock = FakeClock()
    idle = ScriptedProcess([60 * MIB] * 10, releases=0)
    registry = CollectorRegistry()
    trimmer = HeapTrimmer(
        clock=clock, read_resident=idle.read, load_trim=idle.load, metrics=new_heap_metrics(registry)
    )
    task = asyncio.create_task(trimmer.run())
    await asyncio.sleep(0)
    await turns(trimmer, clock, idle)
    assert (counted(registry), idle.loads) == ((0, 0), 0), "an idle process neither trims nor loads ctypes"

    busy = ScriptedProcess([60 * MIB, 64 * MIB, 70 * MIB, 75 * MIB, 70 * MIB], releases=12 * MIB)
    trimmer.read_resident, trimmer.load_trim = busy.read, busy.load
    await turns(trimmer, clock, busy)
    task.cancel()
    # 70 MiB is 10 above the 60 it started at: a trim takes it to 58; 75 is 17 above: another, to 63;
    # 70 is 7 above that: none.
    assert (counted(registry), busy.loads) == ((2, 24 * MIB), 1)


async def test_without_malloc_trim_the_trimmer_stops_and_the_manager_goes_on() -> None:
    clock = FakeClock()
    process = ScriptedProcess([60 * MIB, 90 * MIB, 120 * MIB], releases=0)
    registry = CollectorRegistry()
    trimmer = HeapTrimmer(
        clock=clock, read_resident=process.read, load_trim=lambda: None, metrics=new_heap_metrics(registry)
    )
    task = asyncio.create_task(trimmer.run())
    await asyncio.sleep(0)
    await turns(trimmer, clock, process)
    assert task.done()
    assert task.exception() is None
    assert counted(registry) == (0, 0)


FRAGMENTED_HEAP = textwrap.dedent(
    """
    from leaderworkerset.runtime.heap import glibc_malloc_trim, resident_bytes

    base = resident_bytes()
    blocks = [bytearray(b"x" * 1000) for _ in range(100_000)]  # 1,000 B each: C heap, not pymalloc
    grown = resident_bytes() - base
    pins = blocks[::100]  # one live block every 100 KB holds the heap's top up
    del blocks
    freed = resident_bytes() - base
    glibc_malloc_trim()()
    print(grown, freed, resident_bytes() - base, len(pins))
    """
)


@pytest.mark.skipif(
    not os.confstr("CS_GNU_LIBC_VERSION"), reason="malloc_trim is glibc's; this C library has none"
)
def test_glibc_keeps_freed_blocks_resident_until_a_trim_returns_them() -> None:
    """Why the trimmer exists, on a real heap: freeing 99 % of 100 MB of blocks leaves the RSS where
    it was, and one trim gives back nearly all of it."""
    done = subprocess.run(
        [sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, check=True, timeout=60
    )
    grown, freed, trimmed, _ = (int(value) for value in done.stdout.split())
    assert grown >= 90 * MIB
    assert freed >= 0.9 * grown, "glibc kept the freed blocks resident"
    assert trimmed <= 0.2 * grown, "the trim returned the free pages"
