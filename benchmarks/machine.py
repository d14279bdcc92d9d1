"""What the figures were measured on: one place for the CPU model the reports print."""

from __future__ import annotations

import contextlib
from pathlib import Path


def cpu_model() -> str:
    """The first ``model name`` of /proc/cpuinfo, or "unknown CPU" off Linux."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"
