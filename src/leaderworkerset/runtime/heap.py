"""Hand the C heap's free pages back to the kernel after the manager's RSS has grown.

CPython gives every object over 512 bytes, and every buffer (response bodies, decoded lists), to the
C allocator. glibc keeps freed blocks inside its heap for reuse, and a heap shrinks only from its
top: one block still live near the top holds every free page below it, so without help the process
stays at the RSS of its busiest moment (a create of 1,000 pods left the manager at its peak RSS for
as long as it then idled). glibc's `malloc_trim(0)` returns every whole free page inside its heaps
to the kernel; calling it when the RSS has grown by `growth` since the last call keeps the RSS near
what is live, at one heap walk per growth step and none while nothing grows.

The trimmer reads its RSS from /proc/self/statm (Linux). Where that file or `malloc_trim` is missing
(another OS, musl) it logs once and stops: the manager runs as before, only without the trims.
`ctypes` is imported at the first trim, not at start, so an idle manager does not pay for it.

On /metrics (the manager's registry): `lws_heap_trims_total`, the trims made, and
`lws_heap_trimmed_bytes_total`, the RSS they gave back, so that an operator can see the trims at work.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog
from prometheus_client import CollectorRegistry, Counter

from leaderworkerset.runtime.clock import Clock, RealClock

log = structlog.get_logger(__name__)

STATM = Path("/proc/self/statm")
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# A trim walks every heap; one per 8 MiB of growth is a handful per burst and none when idle.
DEFAULT_GROWTH = 8 * 1024 * 1024
DEFAULT_INTERVAL = 2.0  # seconds between two reads of the RSS


def resident_bytes(statm: Path = STATM) -> int:
    """The process's RSS: statm's second field counts resident pages."""
    return int(statm.read_text().split()[1]) * PAGE


def glibc_malloc_trim() -> Callable[[], object] | None:
    """`malloc_trim(0)` of the process's C library, or None where it has none."""
    import ctypes  # only once a trim is due: about 0.7 MiB that an idle manager does without

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


@dataclass(frozen=True)
class HeapMetrics:
    trims: Counter
    trimmed_bytes: Counter


def new_heap_metrics(registry: CollectorRegistry | None = None) -> HeapMetrics:
    reg = registry if registry is not None else CollectorRegistry()
    return HeapMetrics(
        trims=Counter("lws_heap_trims", "Times the manager gave its C heap's free pages back", registry=reg),
        trimmed_bytes=Counter(
            "lws_heap_trimmed_bytes", "Resident bytes the heap trims gave back to the kernel", registry=reg
        ),
    )


def trim_due(resident: int, after_last_trim: int, growth: int) -> bool:
    """A trim is due once the RSS stands `growth` bytes above what the last one left."""
    return resident - after_last_trim >= growth


@dataclass
class HeapTrimmer:
    """The runnable: reads the RSS every `interval` seconds and trims when `trim_due`."""

    clock: Clock = field(default_factory=RealClock)
    interval: float = DEFAULT_INTERVAL
    growth: int = DEFAULT_GROWTH
    read_resident: Callable[[], int] = resident_bytes
    load_trim: Callable[[], Callable[[], object] | None] = glibc_malloc_trim
    metrics: HeapMetrics = field(default_factory=new_heap_metrics)

    async def run(self) -> None:
        try:
            after_last_trim = self.read_resident()
        except (OSError, ValueError, IndexError) as err:
            log.info("heap trims off: the process's RSS cannot be read", error=str(err))
            return
        trim: Callable[[], object] | None = None
        while True:
            await self.clock.sleep(self.interval)
            resident = self.read_resident()
            if not trim_due(resident, after_last_trim, self.growth):
                # The RSS fell (pages the allocator returned itself): measure growth from there.
                after_last_trim = min(after_last_trim, resident)
                continue
            if trim is None:
                trim = self.load_trim()
                if trim is None:
                    log.info("heap trims off: the C library has no malloc_trim")
                    return
            trim()
            after_last_trim = self.read_resident()
            self.metrics.trims.inc()
            self.metrics.trimmed_bytes.inc(max(resident - after_last_trim, 0))
            log.debug(
                "heap trimmed",
                rss_before_mib=round(resident / 2**20, 1),
                rss_after_mib=round(after_last_trim / 2**20, 1),
            )
