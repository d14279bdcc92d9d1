"""Long-running steps with a visible name and elapsed time.

On a terminal a live spinner line is shown; elsewhere (CI logs) one line is
printed when a step starts, every minute while it runs, and when it ends, so
a slow cold build never looks hung.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

_console = Console(stderr=True)


class StepError(RuntimeError):
    """A step's command exited non-zero; the message carries the tail of its log."""


def _fmt(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def run_step(
    title: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    started: float,
) -> None:
    """Run ``argv`` as one named step, appending its output to ``log``."""
    step_start = time.monotonic()
    with log.open("ab") as out:
        out.write(f"\n==> {title}: {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        if _console.is_terminal:
            with _console.status(title) as status:
                while proc.poll() is None:
                    status.update(
                        f"{title} [dim](step {_fmt(time.monotonic() - step_start)}, "
                        f"total {_fmt(time.monotonic() - started)})[/dim]"
                    )
                    time.sleep(0.5)
        else:
            print(f"[lws build] {title} ...", file=sys.stderr, flush=True)
            last_report = time.monotonic()
            while proc.poll() is None:
                time.sleep(1)
                if time.monotonic() - last_report >= 60:
                    last_report = time.monotonic()
                    print(
                        f"[lws build] {title}: still running after {_fmt(last_report - step_start)}",
                        file=sys.stderr,
                        flush=True,
                    )
    took = _fmt(time.monotonic() - step_start)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-40:]
        raise StepError(
            f"{title} failed (exit {proc.returncode}) after {took}; log {log}:\n" + "\n".join(tail)
        )
    _console.print(f"[green]✓[/green] {title} [dim]({took})[/dim]")
