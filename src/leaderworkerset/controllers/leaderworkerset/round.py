"""What one reconcile of an LWS learned so far, passed between its steps and collaborators."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.objects import ControllerEvent, MutableObj, revision_key_of
from leaderworkerset.core.rollout.control import NO_ROLLOUT_CONTROL, RolloutControl, Stall
from leaderworkerset.core.rollout.partition import RolloutDecision
from leaderworkerset.core.rollout.surgefallback.decision import SURGE, SurgeMode
from leaderworkerset.runtime.objects import ObjectKey


@dataclass
class Round:
    # The LWS with the status as the round's steps left it; `stored` is the LWS the server holds as
    # far as we know (read at the start, or our last write): the round's status write is guarded by
    # its resourceVersion, and its events name it.
    lws: MutableObj
    key: ObjectKey
    stored: MutableObj
    leader_sts: MutableObj | None = None
    revision: Mapping[str, Any] | None = None
    revision_created: bool = False
    applied_sts: MutableObj | None = None
    # Rollout control (opt-in annotations, core/rollout/control.py).
    control: RolloutControl = NO_ROLLOUT_CONTROL
    stall: Stall | None = None
    under_way: bool = False
    requeue_after: float | None = None
    decision: RolloutDecision | None = None
    # Diff-aware in-place updates (opt-in, core/rollout/inplaceupdate/), the rollout decision's
    # inputs: the leader StatefulSet's partition stays at its replicas while groups wait for theirs,
    # and is not lowered while its controller has not counted every leader updated in place.
    in_place_hold: bool = False
    in_place_keep: bool = False
    # Capacity-aware surge (opt-in, core/rollout/surgefallback/decision.py): this round's mode.
    surge: SurgeMode = SURGE
    # The status write: whether a step changed the status, and the events of those transitions,
    # recorded once the write lands (status.py).
    status_changed: bool = False
    status_events: list[ControllerEvent] = field(default_factory=list)
    # The set's leader pods and StatefulSets from the cache, read once per round (each read converts
    # every one of them; the steps share one view of the set).
    _leader_pods: list[MutableObj] | None = None
    _statefulsets: list[MutableObj] | None = None

    @classmethod
    def of(cls, lws: MutableObj, key: ObjectKey) -> Round:
        return cls(lws=lws, key=key, stored=lws)

    @property
    def revision_key(self) -> str:
        return revision_key_of(self.revision) if self.revision is not None else ""

    def set_status(self, status: Mapping[str, Any], events: Iterable[ControllerEvent] = ()) -> None:
        """A step's contribution to the round's status write, and the events of its transitions."""
        self.lws = {**self.lws, "status": dict(status)}
        self.status_changed = True
        self.status_events.extend(events)

    def leader_pods(self, informers: SharedInformers) -> list[MutableObj]:
        if self._leader_pods is None:
            self._leader_pods = informers.set_leader_pods(self.key.namespace, self.key.name)
        return self._leader_pods

    def statefulsets(self, informers: SharedInformers) -> list[MutableObj]:
        if self._statefulsets is None:
            self._statefulsets = informers.set_statefulsets(self.key.namespace, self.key.name)
        return self._statefulsets
