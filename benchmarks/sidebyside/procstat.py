"""CPU-seconds and RSS of a controller process (and any children) from Linux /proc.

A sampler thread reads VmRSS of the process tree every `interval` seconds, so a scenario window gets
its peak and its last (steady) RSS; CPU is utime + stime read at the window's edges.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo.extend(_children(current))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


# VmRSS is the sum of the other three: anonymous memory (the heaps), file-backed pages (the
# interpreter, shared libraries and extension modules mapped from disk) and shared memory.
RSS_PARTS = ("VmRSS", "RssAnon", "RssFile", "RssShmem")


def status_values(text: str, keys: tuple[str, ...]) -> dict[str, int]:
    """The kB values of the named lines of a /proc/<pid>/status text (0 where a line is absent)."""
    values = dict.fromkeys(keys, 0)
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in values:
            values[key] = int(rest.split()[0])
    return values


def _tree_totals(pids: list[int], name: str, parse: Callable[[str], dict[str, int]]) -> dict[str, int]:
    """`parse` of /proc/<pid>/<name> summed over the tree (a process gone meanwhile counts nothing)."""
    totals: dict[str, int] = {}
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/{name}").read_text()
        except OSError:
            continue
        for key, kib in parse(text).items():
            totals[key] = totals.get(key, 0) + kib
    return totals


def status_totals(pids: list[int], keys: tuple[str, ...]) -> dict[str, int]:
    return dict.fromkeys(keys, 0) | _tree_totals(pids, "status", lambda text: status_values(text, keys))


def status_kib(pids: list[int], key: str) -> int:
    return status_totals(pids, (key,))[key]


def mapping_owner(path: str) -> str:
    """Who a mapping of /proc/<pid>/smaps belongs to: a kernel region as named, anonymous memory
    (the allocators' arenas, thread stacks), a Python package's extension modules, the
    interpreter, or a shared library by its name without the version."""
    if not path:
        return "anonymous"
    if path.startswith("["):
        return path
    if "/site-packages/" in path:
        top = path.split("/site-packages/", 1)[1].split("/", 1)[0]
        return "package " + top.split(".", 1)[0].removesuffix("_libs").lstrip("_")
    if "/lib-dynload/" in path:
        return "stdlib extension modules"
    name = path.rsplit("/", 1)[-1]
    if name.startswith(("python3", "libpython3")):
        return "interpreter"
    return name.split(".so", 1)[0]


def smaps_kib(text: str) -> dict[str, int]:
    """Resident kB of a /proc/<pid>/smaps text, summed per `mapping_owner`."""
    owners: dict[str, int] = {}
    owner = "anonymous"
    for line in text.splitlines():
        head = line.split(None, 5)
        if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
            owner = mapping_owner(head[5].strip() if len(head) == 6 else "")
        elif head and head[0] == "Rss:":
            owners[owner] = owners.get(owner, 0) + int(head[1])
    return owners


def smaps_totals(pids: list[int]) -> dict[str, int]:
    return _tree_totals(pids, "smaps", smaps_kib)


# A window's RSS breakdown is read again whenever its RSS grows this much past the last one read,
# so the last breakdown is within this of the window's peak at a few dozen reads of smaps.
BREAKDOWN_GROWTH = 1.02


@dataclass
class Sampler:
    """Samples the RSS of one process tree in a thread; `open_window()` and `breakdown_mib()`
    bracket a measurement, `rss_between()` and `parts_at_peak()` read its samples."""

    pid: int
    interval: float = 0.25
    # (time, {part: kB}) per sample: VmRSS and what it is made of (RSS_PARTS).
    samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    # The current window's (VmRSS, smaps_totals) read nearest its peak so far, if a window is open.
    breakdown: tuple[int, dict[str, int]] | None = None
    _window_open: bool = False
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)

    def _run(self) -> None:
        pids = tree(self.pid)
        last_tree = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() - last_tree > 5:
                pids, last_tree = tree(self.pid), time.monotonic()
            parts = status_totals(pids, RSS_PARTS)
            self.samples.append((time.monotonic(), parts))
            if self._window_open and (
                self.breakdown is None or parts["VmRSS"] >= self.breakdown[0] * BREAKDOWN_GROWTH
            ):
                self.breakdown = (parts["VmRSS"], smaps_totals(pids))
            self._stop.wait(self.interval)

    def open_window(self) -> None:
        """Start reading the RSS breakdown near this window's peak (`breakdown_mib`)."""
        self.breakdown, self._window_open = None, True

    def breakdown_mib(self, smallest: float = 0.5) -> dict[str, float]:
        """The open window's breakdown nearest its peak, in MiB per owner, largest first; owners
        under `smallest` MiB are summed as "other". Closes the window."""
        self._window_open = False
        read, self.breakdown = self.breakdown, None
        if read is None:
            return {}
        owners = sorted(read[1].items(), key=lambda item: -item[1])
        shown = {owner: round(kib / 1024, 1) for owner, kib in owners if kib / 1024 >= smallest}
        rest = sum(kib for owner, kib in owners if owner not in shown) / 1024
        return shown | ({"other": round(rest, 1)} if rest else {}) | {"at_rss": round(read[0] / 1024, 1)}

    def cpu(self) -> float:
        return cpu_seconds(tree(self.pid))

    def rss_between(self, start: float, end: float) -> tuple[float, float]:
        """(peak, last) RSS in MiB of the samples taken in [start, end]."""
        inside = [parts["VmRSS"] for t, parts in self.samples if start <= t <= end] or [
            status_kib(tree(self.pid), "VmRSS")
        ]
        return max(inside) / 1024, inside[-1] / 1024

    def parts_at_peak(self, start: float, end: float) -> dict[str, float]:
        """Anonymous, file-backed and shared MiB of the largest sample in [start, end]: what the
        peak is made of (libraries mapped from disk against heap)."""
        inside = [parts for t, parts in self.samples if start <= t <= end]
        if not inside:
            return {}
        peak = max(inside, key=lambda parts: parts["VmRSS"])
        return {f"peak_rss_{key[3:].lower()}_mib": peak[key] / 1024 for key in RSS_PARTS[1:]}

    def hwm_mib(self) -> float:
        return status_kib(tree(self.pid), "VmHWM") / 1024
