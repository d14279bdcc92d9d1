"""The LWS status of one round: every step's contribution, then one write with one conflict policy.

The steps (annotation flags, scheduling prerequisites, counts and conditions, rollout control, an
invalid spec) each leave the status they want in the round (`Round.set_status`); `persist` writes
it once, guarded by the resourceVersion the round read, as kubernetes-sigs/jobset's
`updateJobSetStatus`, and then records the events of the transitions it made. A conflict drops the
write and its events: a newer LWS is on its way through the watch, and the next round decides again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref, record
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.core.desired import statuswrite
from leaderworkerset.core.desired.status import plan_status
from leaderworkerset.core.hashidentity import plan_hash_status
from leaderworkerset.core.objects import ControllerEvent, MutableObj, name_of
from leaderworkerset.core.rollout.control import rollout_control
from leaderworkerset.core.rollout.partition import LeaderStatefulSetView
from leaderworkerset.runtime.errors import ApiStatusError, is_conflict, is_not_found
from leaderworkerset.runtime.resources import LEADERWORKERSETS

# The package's logger, the one these lines had before the controller became a package.
log = structlog.get_logger(__package__)


@dataclass(eq=False)
class StatusWriter(Shell):
    # Our own status writes, until the LWS watch delivers them: a reconcile right after a write
    # would otherwise PUT again from the stale cached copy and conflict (45 of 92
    # status PUTs answered 409 in a 250-group create).
    memo: WriteMemo = field(default_factory=WriteMemo)
    # In-place group restart's prerequisites, when this manager knows them (the CLI wires them).
    restart_support: InPlaceRestartSupport | None = None

    # ----- contributions: each step says what it wants in the status ------------------------------
    def flag_annotations(self, round_: Round) -> bool:
        """Flag (or clear) each of our annotations whose value cannot be used (restart back-off,
        not-ready events) or honoured (an in-place restart strategy) in a condition of our own; True
        when that changes the status. An LWS without such a value, now or before, is never written
        for it."""
        support = self.restart_support
        restart = support.prerequisites() if support is not None else statuswrite.NO_MISSING_PREREQUISITES
        flagged = statuswrite.annotation_status(round_.lws, self.clock.wall(), restart)
        if flagged is None:
            return False
        round_.set_status(*flagged)
        return True

    def report_invalid_spec(self, round_: Round, problem: str) -> None:
        """Log, Warning event and Progressing=False (InvalidSpec) for an LWS we cannot act on as
        written: nothing else tells its owner why no group appears or changes (ground rule 3)."""
        log.warning("LeaderWorkerSet cannot be reconciled as written", error=problem)
        self.recorder.warning(lws_ref(round_.lws), c.REASON_INVALID_SPEC, c.EVENT_ACTION_RECONCILE, problem)
        status = statuswrite.invalid_spec_status(round_.lws, problem, self.clock.wall())
        if status is not None:
            round_.set_status(status)

    def ordinal(self, round_: Round) -> tuple[Mapping[str, Any], bool]:
        """The counts and conditions from the leader StatefulSet, leader pods and worker
        StatefulSets: the status they make, and whether the rollout is done."""
        name = round_.key.name
        leader_pods = round_.leader_pods(self.informers)
        workers = {name_of(sts): sts for sts in round_.statefulsets(self.informers) if name_of(sts) != name}
        plan = plan_status(
            round_.lws,
            round_.applied_sts or round_.leader_sts or {},
            revision_key=round_.revision_key,
            leader_pods=leader_pods,
            worker_statefulsets=workers,
            now=self.clock.wall(),
        )
        return self._contribute(round_, plan.status, plan.changed, plan.event), plan.update_done

    def hash(self, round_: Round, applied: MutableObj, leaders: list[MutableObj]) -> bool:
        """The Hash status, read from the leader Deployment; True when the rollout is done."""
        plan = plan_hash_status(round_.lws, applied, leaders, self.clock.wall())
        # Rollout control is Ordinal-only: on a Hash set its annotations are reported, not acted on.
        round_.control = rollout_control(round_.lws)
        self._contribute(round_, plan.status, plan.changed, plan.event)
        return plan.update_done

    def _contribute(
        self, round_: Round, status: dict[str, Any], changed: bool, event: ControllerEvent | None
    ) -> Mapping[str, Any]:
        status, control_changed, control_events = self._with_rollout_conditions(round_, status)
        status, surge_changed, surge_events = statuswrite.surge_fallback_status(
            round_.lws, status, round_.surge, self.clock.wall()
        )
        if changed or control_changed or surge_changed:
            events = [*([] if event is None else [event]), *control_events, *surge_events]
            round_.set_status(status, events)
        return status

    # ----- the round's one write --------------------------------------------------------------------
    async def persist(self, round_: Round) -> bool:
        """PUT the status the round's steps left, when one of them changed it, then record the
        events of their transitions. False: the write conflicted, a newer LWS is on its way through
        the watch and the round that reads it decides (and announces) again. Whatever fails, the
        round's contributions are spent: a second call writes only what was added since."""
        if not round_.status_changed:
            return True
        body, events = statuswrite.write_body(round_.lws), round_.status_events
        round_.status_changed, round_.status_events = False, []
        try:
            written = await self.client.update(LEADERWORKERSETS, body, "status")
        except Exception as err:
            round_.lws = round_.stored  # nothing of it landed
            if is_conflict(err):
                return False
            raise
        self.memo.remember(round_.key, written)
        round_.lws = round_.stored = written
        for event in events:
            record(self.recorder, body, event)
        return True

    async def persist_failed(self, round_: Round) -> None:
        """The status a failing round decided (a scheduling condition, InvalidSpec) is written all
        the same; the caller raises the round's own error, so a conflict or a deleted LWS is left to
        the next round, as for any write."""
        try:
            await self.persist(round_)
        except Exception as err:
            if not is_not_found(err):
                raise

    def _with_rollout_conditions(
        self, round_: Round, status: dict[str, Any]
    ) -> tuple[dict[str, Any], bool, tuple[ControllerEvent, ...]]:
        return statuswrite.rollout_control_status(
            round_.lws,
            status,
            round_.control,
            stall=round_.stall,
            now=self.clock.wall(),
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
