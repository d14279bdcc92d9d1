"""What one reconcile of an LWS learned so far, passed between its steps and collaborators."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.controllers.informers import Obj, SharedInformers
from leaderworkerset.core.revision import revision_key
from leaderworkerset.core.rollout import RolloutDecision
from leaderworkerset.core.rolloutcontrol import NO_ROLLOUT_CONTROL, RolloutControl, Stall
from leaderworkerset.runtime.objects import ObjectKey


@dataclass
class Round:
    lws: Obj
    key: ObjectKey
    leader_sts: Obj | None = None
    revision: Mapping[str, Any] | None = None
    revision_created: bool = False
    applied_sts: Obj | None = None
    # Rollout control (opt-in annotations, core/rolloutcontrol.py).
    control: RolloutControl = NO_ROLLOUT_CONTROL
    stall: Stall | None = None
    under_way: bool = False
    requeue_after: float | None = None
    decision: RolloutDecision | None = None
    # The set's leader pods and StatefulSets from the cache, read once per round (each read converts
    # every one of them; the steps share one view of the set).
    _leader_pods: list[Obj] | None = None
    _statefulsets: list[Obj] | None = None

    @property
    def revision_key(self) -> str:
        return revision_key(self.revision) if self.revision is not None else ""

    def leader_pods(self, informers: SharedInformers) -> list[Obj]:
        if self._leader_pods is None:
            self._leader_pods = informers.set_leader_pods(self.key.namespace, self.key.name)
        return self._leader_pods

    def statefulsets(self, informers: SharedInformers) -> list[Obj]:
        if self._statefulsets is None:
            self._statefulsets = informers.set_statefulsets(self.key.namespace, self.key.name)
        return self._statefulsets
