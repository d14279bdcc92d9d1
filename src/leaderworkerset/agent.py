"""The in-place restart agent: `python -m leaderworkerset.agent EPOCH_FILE` (docs/in-place-restart.md).

A sidecar the pod webhook adds to each pod of a set with `leaderworkerset.dev/restart-strategy:
InPlace`. It reads the group's restart epoch from a downward-API file (the kubelet rewrites the file
when the pod's annotation changes; the agent needs no API access and no token) and, when the epoch
moves on because *another* pod of its group failed, exits with `EXIT_RESTART`: its container's
`RestartAllContainers` rule then restarts every container of its pod in place. An epoch that its own
pod started needs nothing (that pod restarted already) and becomes the new baseline.

Standard library only, imported by nothing else of the package: the interpreter and this module are
all it loads (see docs/in-place-restart.md for its measured memory).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

# Must equal core.lifecycle.inplacerestart.AGENT_EXIT_CODE (a unit test holds them together).
EXIT_RESTART = 88
POLL_SECONDS = 0.2


def read_epoch(path: str) -> str:
    """The file's value ("" before the controller ever wrote one, or if the file is missing)."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except FileNotFoundError:
        return ""


def should_restart(baseline: str, current: str, own_pod: str) -> bool:
    """Whether the epoch moved on because of another pod's failure (value `<epoch> <origin pod>`)."""
    if not current or current == baseline:
        return False
    _, _, origin = current.partition(" ")
    return origin != own_pod


def watch(
    path: str,
    own_pod: str,
    *,
    read: Callable[[str], str] = read_epoch,
    sleep: Callable[[float], None] = time.sleep,
    poll: float = POLL_SECONDS,
) -> int:
    """Poll until the pod must restart; returns the exit code that says so."""
    baseline = read(path)
    while True:
        current = read(path)
        if should_restart(baseline, current, own_pod):
            return EXIT_RESTART
        baseline = current or baseline
        sleep(poll)


def _terminate(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    # As PID 1 a process ignores SIGTERM without a handler: the kubelet would wait the whole grace
    # period before every in-place restart and every deletion.
    sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m leaderworkerset.agent EPOCH_FILE (POD_NAME in the environment)", file=sys.stderr
        )
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    own_pod = os.environ.get("POD_NAME", "")
    code = watch(args[0], own_pod)
    print(f"restart epoch changed ({read_epoch(args[0])!r}): restarting pod {own_pod} in place", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
