"""Start, watch and stop control-plane processes without leaving orphans."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(argv: Sequence[str], *, log: Path, cwd: Path, die_with_parent: bool) -> subprocess.Popen[bytes]:
    """Start a component in its own session with output appended to ``log``.

    ``die_with_parent`` ties the component's life to this process (test
    fixtures: a crashed pytest leaves nothing behind); a detached ``lws cluster
    up`` instead records pids and is stopped by ``lws cluster down``.
    """
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )


def is_ours(pid: int, marker: str) -> bool:
    """True if ``pid`` is alive and its command line mentions ``marker`` (our work dir).

    Guards against killing an unrelated process that reused a recorded pid.
    """
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def terminate(pid: int, grace: float = 10.0) -> None:
    """SIGTERM, wait up to ``grace`` seconds, then SIGKILL the process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not _alive(pid):
                return
            time.sleep(0.1)


def wait_for(
    what: str,
    check: Callable[[], bool],
    *,
    timeout: float,
    alive: Callable[[], str | None] = lambda: None,
    interval: float = 0.2,
) -> None:
    """Poll ``check`` until it is true; fail early if ``alive`` reports a dead component."""
    deadline = time.monotonic() + timeout
    while True:
        died = alive()
        if died:
            raise TimeoutError(f"{died} exited while waiting for {what}")
        try:
            if check():
                return
        except Exception:  # any error only means "not ready yet"
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
