"""The pod controller's clock: wall-clock seconds (`time.time` in production).

Wall time, not the runtime's monotonic `Clock`: what it stamps (ledger entries, back-off state, the
leader's group-ready condition) is stored in the cluster and read by other processes.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

WallClock = Callable[[], float]


def utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)
