"""How big a chaos run is: the CI size by default, the documented full size with ``LWS_CHAOS_SIZE=full``.

Every chaos module takes its counts (kills, failovers, fuzzed objects, pods, minutes) from here, so the
suite in CI and the command in docs/reliability.md run the same code at two sizes.
"""

from __future__ import annotations

import os
from typing import Final, Literal, TypeVar

Size = Literal["ci", "full"]
T = TypeVar("T")

_ENV: Final = "LWS_CHAOS_SIZE"


def size() -> Size:
    value = os.environ.get(_ENV, "ci")
    if value not in ("ci", "full"):
        raise ValueError(f"{_ENV} must be 'ci' or 'full', not {value!r}")
    return "full" if value == "full" else "ci"


def pick(ci: T, full: T) -> T:
    """The CI-size value, or the full-size one when ``LWS_CHAOS_SIZE=full``."""
    return full if size() == "full" else ci
