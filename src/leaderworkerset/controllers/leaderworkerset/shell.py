"""What every collaborator of the LWS reconciler works with: the API client, the caches, the event
recorder and the clock (the shape of controllers/disaggregatedset's collaborators)."""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder


@dataclass(eq=False)
class Shell:
    client: KubeClient
    informers: SharedInformers
    recorder: EventRecorder
    clock: Clock
