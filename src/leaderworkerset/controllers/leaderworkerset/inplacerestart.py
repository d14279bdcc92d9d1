"""What this manager knows of the in-place group restart's prerequisites (docs/in-place-restart.md),
for the `InPlaceRestartUnavailable` condition of the sets that ask for it
(`core.lifecycle.inplacerestart.unavailable`): an admitted `restart-strategy: InPlace` that this cluster or
this manager cannot honour is said on the set, not only in the recreations' events.

The controllers run no probe of their own: the CLI hands in the answer of the webhooks' dry-run
probe (`webhooks/inplacerestart.py`, asked at start and every minute) and the agent image of the
manager's environment, and calls `changed` when the probe's answer moves, so that every InPlace set
looks again (and its condition is set or cleared) without waiting for an event of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from leaderworkerset.core.lifecycle import inplacerestart


def _not_asked() -> str | None:
    return None


@dataclass
class InPlaceRestartSupport:
    # Why the cluster cannot restart all containers of a pod; None: it can, or not asked yet.
    unsupported: Callable[[], str | None] = _not_asked
    agent_image: str | None = None
    _listeners: list[Callable[[], None]] = field(default_factory=list)

    def prerequisites(self) -> inplacerestart.Prerequisites:
        return inplacerestart.Prerequisites(
            unsupported=self.unsupported(), agent_image=self.agent_image is not None
        )

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def changed(self) -> None:
        """The answer moved: the listeners (the LWS controller) look at every InPlace set again."""
        for listener in self._listeners:
            listener()
