"""The LWS status: annotation flags, an invalid spec, the counts and conditions, and their events."""

from __future__ import annotations

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref, record
from leaderworkerset.controllers.informers import Obj, SharedInformers
from leaderworkerset.controllers.leaderworkerset.metrics import RolloutObserver
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.core import statuswrite
from leaderworkerset.core.groups import ControllerEvent, name_of
from leaderworkerset.core.hashidentity import plan_hash_status
from leaderworkerset.core.rollout import LeaderStatefulSetView
from leaderworkerset.core.rolloutcontrol import rollout_control
from leaderworkerset.core.status import plan_status
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.errors import ApiStatusError, is_conflict, is_not_found
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import LEADERWORKERSETS

# The package's logger, the one these lines had before the controller became a package.
log = structlog.get_logger(__package__)


class StatusWriter:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        clock: Clock,
        *,
        observer: RolloutObserver,
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._clock = clock
        self._observer = observer
        # Our own status writes, until the LWS watch delivers them: a reconcile right after a write
        # would otherwise PUT again from the stale cached copy and conflict (issue 14: 45 of 92
        # status PUTs answered 409 in a 250-group create).
        self.memo = WriteMemo()

    async def annotation_conditions(self, lws: Obj) -> bool:
        """Flag (or clear) each of our annotations whose value cannot be used (restart back-off,
        not-ready events) in a condition of our own; True when the status was written. An LWS
        without a bad value, now or before, is never written here."""
        flagged = statuswrite.annotation_status(lws, self._clock.wall())
        if flagged is None:
            return False
        status, events = flagged
        try:
            await self._client.update(
                LEADERWORKERSETS, {**statuswrite.write_body(lws), "status": status}, "status"
            )
        except Exception as err:
            if not is_conflict(err):
                raise
        for event in events:
            record(self._recorder, lws, event)
        return True

    async def report_invalid_spec(self, lws: Obj, problem: str) -> None:
        """Log, Warning event and Progressing=False (InvalidSpec) for an LWS we cannot act on as
        written: nothing else tells its owner why no group appears or changes (ground rule 3)."""
        log.warning("LeaderWorkerSet cannot be reconciled as written", error=problem)
        self._recorder.warning(lws_ref(lws), c.REASON_INVALID_SPEC, c.EVENT_ACTION_RECONCILE, problem)
        status = statuswrite.invalid_spec_status(lws, problem, self._clock.wall())
        if status is None:
            return
        try:
            await self._client.update(
                LEADERWORKERSETS, {**statuswrite.write_body(lws), "status": status}, "status"
            )
        except Exception as err:
            if not is_conflict(err) and not is_not_found(err):
                raise
            # A newer LWS is on its way through the watch; its reconcile reports it again.

    async def update_ordinal(self, round_: Round) -> bool:
        """Write the counts and conditions when they changed; True when the rollout is done."""
        name = round_.key.name
        leader_pods = round_.leader_pods(self._informers)
        workers = {name_of(sts): sts for sts in round_.statefulsets(self._informers) if name_of(sts) != name}
        plan = plan_status(
            round_.lws,
            round_.applied_sts or round_.leader_sts or {},
            revision_key=round_.revision_key,
            leader_pods=leader_pods,
            worker_statefulsets=workers,
            now=self._clock.wall(),
        )
        status, control_changed, control_events = self._with_rollout_conditions(round_, plan.status)
        if plan.changed or control_changed:
            await self._write(round_, status, plan.event, control_events)
        self._observer.observe(round_, status, plan.update_done)
        return plan.update_done

    async def update_hash(self, round_: Round, applied: Obj, leaders: list[Obj]) -> bool:
        """The Hash status, read from the leader Deployment; True when the rollout is done."""
        plan = plan_hash_status(round_.lws, applied, leaders, self._clock.wall())
        # Rollout control is Ordinal-only: on a Hash set its annotations are reported, not acted on.
        round_.control = rollout_control(round_.lws)
        status, control_changed, control_events = self._with_rollout_conditions(round_, plan.status)
        if plan.changed or control_changed:
            await self._write(round_, status, plan.event, control_events)
        return plan.update_done

    async def _write(
        self,
        round_: Round,
        status: dict[str, object],
        event: ControllerEvent | None,
        control_events: tuple[ControllerEvent, ...],
    ) -> None:
        body = {**statuswrite.write_body(round_.lws), "status": status}
        self.memo.remember(round_.key, await self._client.update(LEADERWORKERSETS, body, "status"))
        if event is not None:
            record(self._recorder, round_.lws, event)
        for control_event in control_events:
            record(self._recorder, round_.lws, control_event)

    def _with_rollout_conditions(
        self, round_: Round, status: dict[str, object]
    ) -> tuple[dict[str, object], bool, tuple[ControllerEvent, ...]]:
        return statuswrite.rollout_control_status(
            round_.lws,
            status,
            round_.control,
            stall=round_.stall,
            now=self._clock.wall(),
            partition=_standing_partition(round_),
            new_step=round_.revision_created,
        )


def _standing_partition(round_: Round) -> int:
    """Where the rollout stood when this reconcile began: what a pause holds, a resume leaves."""
    if round_.leader_sts is not None:
        return LeaderStatefulSetView.of(round_.leader_sts).partition
    return round_.decision.partition if round_.decision is not None else 0


def spec_problem(err: BaseException) -> str | None:
    """What of a failed reconcile is the LWS's own fault, or None for a transient failure.

    Values `core` cannot decode raise ValueError subclasses (IntOrPercentError, GoDecodeError);
    a child the API server refuses as invalid (422) was derived from a spec our webhook would have
    refused. Everything else (conflicts, timeouts, 5xx) is retried without blaming the object.
    """
    if isinstance(err, ApiStatusError):
        return error_text(err) if err.code == 422 else None
    if isinstance(err, ValueError):
        return str(err)
    return None
