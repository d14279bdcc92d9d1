"""The supervisor of a held cluster: restarts kube-controller-manager and kube-scheduler when they exit,
as a kubelet restarts static pods. kube-scheduler exits on purpose when its cache looks corrupted,
which an API server restart can provoke (seen in the chaos suite); without a restart the cluster would
stop scheduling for good. Each restart is logged in logs/supervisor.log and counted in ``restarts``."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path


class Supervisor:
    def __init__(
        self,
        name: str,
        procs: Mapping[str, subprocess.Popen[bytes]],
        starters: Mapping[str, Callable[[], None]],
        log: Path,
    ) -> None:
        self._name, self._procs, self._starters, self._log = name, procs, starters, log
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        # Restarts by component, over the supervisor's whole life.
        self.restarts: dict[str, int] = {}

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._watch, name=f"supervise-{self._name}", daemon=True)
        self._thread.start()

    def stop(self) -> bool:
        """Stop watching; whether it was watching."""
        self._stopping.set()
        if self._thread is None:
            return False
        self._thread.join(timeout=10)
        self._thread = None
        return True

    def _watch(self) -> None:
        while not self._stopping.wait(1.0):
            for component, start in self._starters.items():
                proc = self._procs.get(component)
                if proc is None or proc.poll() is None or self._stopping.is_set():
                    continue
                with self._log.open("a") as log:
                    log.write(
                        f"{time.strftime('%H:%M:%S')} {component} exited ({proc.returncode}); restarting\n"
                    )
                self.restarts[component] = self.restarts.get(component, 0) + 1
                start()
