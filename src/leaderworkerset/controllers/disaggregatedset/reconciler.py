"""The DisaggregatedSet reconciler: one reconcile of `<namespace>/<ds>`.

1. read the DS and its children from the caches; compute the target revision;
2. delete children of removed slices (Foreground, UID precondition);
3. reconcile role scalers and resolve every role's replica target — an unresolved External role
   pauses all child writes (Progressing/ReplicaTargetsUnresolved, retry in 1 s);
4. per slice, independently: the steady state or one rollout step, then the
   slice's private Services; a failing slice does not stop the others;
5. write scaler status, then the DS status when it changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.children import Children
from leaderworkerset.controllers.disaggregatedset.executor import ROLLOUT_REQUEUE_SECONDS, RolloutExecutor
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers
from leaderworkerset.controllers.disaggregatedset.scalers import Scalers
from leaderworkerset.controllers.disaggregatedset.services import Services
from leaderworkerset.controllers.disaggregatedset.surgefallback import DsSurgeFallback
from leaderworkerset.controllers.generationmemo import GenerationMemo
from leaderworkerset.core.desired import statuswrite
from leaderworkerset.core.disaggregated.children import (
    build_child,
    old_children,
    resolve_targets,
    slice_children,
    target_children,
    unresolved_roles,
)
from leaderworkerset.core.disaggregated.current import (
    ChildAction,
    CreateChild,
    ScaleChild,
    SetInitialReplicas,
    SyncGroupReplacementPolicy,
    SyncRestartBackoff,
    plan_current_revision,
)
from leaderworkerset.core.disaggregated.naming import role_names, slice_count, slice_of
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.disaggregated.status import plan_ds_status
from leaderworkerset.core.objects import ControllerEvent, Obj, is_deleting, name_of
from leaderworkerset.core.rollout.surgefallback.decision import SURGE, SurgeMode
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.errors import is_conflict
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS

log = structlog.get_logger(__name__)


class SliceReconcileError(Exception):
    """Some slices failed; the others were reconciled. The message lists every failure."""


def earliest(a: Result | None, b: Result | None) -> Result | None:
    """The sooner of two requeue-after results (None means no timed requeue)."""
    if b is None or b.requeue_after is None:
        return a
    if a is None or a.requeue_after is None or b.requeue_after < a.requeue_after:
        return b
    return a


@dataclass
class _Round:
    ds: Obj
    revision: str
    slices: int
    roles: list[str]
    # Capacity-aware surge (opt-in, core/rollout/surgefallback/disaggregated.py): this round's mode.
    surge: SurgeMode = SURGE


def _target_revision(ds: Mapping[str, Any]) -> str:
    return disaggregated_revision((ds.get("spec") or {}).get("roles") or [])


class DisaggregatedSetReconciler:
    def __init__(
        self,
        client: KubeClient,
        informers: DisaggregatedSetInformers,
        recorder: EventRecorder,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder
        # Wall time for the status it writes (condition transitions, scaler status).
        self._clock = clock or RealClock()
        self.children = Children(client, informers)
        self._scalers = Scalers(client, informers, recorder)
        self._services = Services(client, informers)
        self._executor = RolloutExecutor(self.children, recorder)
        self._surge = DsSurgeFallback(client, self._clock)
        # The target revision, once per spec generation (hashing the roles' templates is the costly part).
        self.revisions: GenerationMemo[str] = GenerationMemo(_target_revision)
        self.revisions.forget_on_delete(informers.sets)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cached = self._informers.sets.store.get(key)
        if cached is None or is_deleting(cached):
            return None  # children go away through garbage collection
        ds = {**cached, "apiVersion": c.DS_API_VERSION, "kind": c.DS_KIND}
        round_ = _Round(ds, self.revisions.get(ds), slice_count(ds), role_names(ds))
        await self._delete_removed_slices(round_)
        bound = await self._scalers.reconcile(ds, self.children.of(ds))
        targets = resolve_targets(ds, bound)
        unresolved = unresolved_roles(round_.roles, targets)
        result: Result | None = None
        failures: list[str] = []
        if unresolved:
            log.info("waiting for replica targets before reconciling slices", roles=unresolved)
            result = Result(requeue_after=ROLLOUT_REQUEUE_SECONDS)
        else:
            round_.surge = await self._surge.decide(ds, round_.revision, targets, self.children.of(ds))
            round_.ds = ds = await self._surge.remember(ds, round_.surge)  # before any child moves
            result, failures = await self._reconcile_slices(round_, targets)
            if round_.surge.requeue_after is not None:
                result = earliest(result, Result(requeue_after=round_.surge.requeue_after))
        children = self.children.of(ds)
        await self._services.migrate_legacy(ds, children)
        await self._scalers.write_status(ds, bound, children, self._clock.wall())
        try:
            await self._update_status(round_, children, targets, unresolved)
        except Exception as err:
            if not is_conflict(err):
                raise
            result = Result(requeue=True)  # a newer DS is on its way through the watch
        if failures:
            raise SliceReconcileError("; ".join(failures))
        return result

    # ----- step 2 ---------------------------------------------------------------------------------
    async def _delete_removed_slices(self, round_: _Round) -> None:
        ref = object_ref(round_.ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)
        for lws in self.children.of(round_.ds):
            index = slice_of(lws)
            if index is None or index < round_.slices or is_deleting(lws):
                continue
            await self.children.delete(lws)
            note = c.MSG_LWS_DELETED_REMOVED_SLICE % (name_of(lws), index)
            self._recorder.normal(ref, c.EVENT_LWS_DELETED, c.EVENT_ACTION_DELETE, note)

    # ----- step 4 ---------------------------------------------------------------------------------
    async def _reconcile_slices(
        self, round_: _Round, targets: Mapping[str, int]
    ) -> tuple[Result | None, list[str]]:
        result: Result | None = None
        failures: list[str] = []
        for index in range(round_.slices):
            try:
                result = earliest(result, await self._reconcile_slice(round_, index, targets))
            except Exception as err:
                log.warning("slice reconcile failed", slice=index, error=str(err))
                failures.append(f"slice {index}: {err}")
        return result, failures

    async def _reconcile_slice(self, round_: _Round, index: int, targets: Mapping[str, int]) -> Result | None:
        mine = slice_children(self.children.of(round_.ds), index)
        result: Result | None = None
        if old_children(mine, round_.revision):
            without_surge = round_.surge.fallback
            result = await self._executor.step(
                round_.ds, index, round_.revision, targets, mine, without_surge=without_surge
            )
        else:
            plan = plan_current_revision(round_.ds, index, round_.revision, targets, mine)
            await self._apply_current(round_, index, plan, mine)
        target = target_children(slice_children(self.children.of(round_.ds), index), round_.revision)
        await self._services.reconcile_slice(round_.ds, round_.roles, target)
        return result

    async def _apply_current(
        self, round_: _Round, index: int, plan: Sequence[ChildAction], mine: Sequence[Obj]
    ) -> None:
        ds = round_.ds
        by_name = {name_of(lws): lws for lws in mine}
        roles = {str(role.get("name")): role for role in (ds.get("spec") or {}).get("roles") or []}
        for action in plan:
            if isinstance(action, CreateChild):
                body = build_child(
                    ds,
                    roles[action.role],
                    index,
                    round_.revision,
                    replicas=action.replicas,
                    initial=action.initial,
                )
                await self.children.create(ds, body)
            elif isinstance(action, SetInitialReplicas):
                await self.children.set_initial_replicas(ds, by_name[action.lws], action.value)
            elif isinstance(action, ScaleChild):
                log.info(
                    "scaling LWS",
                    role=action.role,
                    lws=action.lws,
                    current=action.current,
                    to=action.replicas,
                )
                await self.children.scale(ds, by_name[action.lws], action.replicas)
            elif isinstance(action, SyncGroupReplacementPolicy):
                patch = {"spec": {"groupReplacementPolicy": action.policy}}
                await self.children.patch(ds, by_name[action.lws], patch)
            elif isinstance(action, SyncRestartBackoff):
                backoff = None if action.restart_backoff is None else dict(action.restart_backoff)
                lwt_patch: dict[str, Any] = {"restartBackoff": backoff}
                await self.children.patch(
                    ds, by_name[action.lws], {"spec": {"leaderWorkerTemplate": lwt_patch}}
                )

    # ----- step 5 ---------------------------------------------------------------------------------
    async def _update_status(
        self, round_: _Round, children: Sequence[Obj], targets: Mapping[str, int], unresolved: Sequence[str]
    ) -> None:
        now = self._clock.wall()
        plan = plan_ds_status(round_.ds, children, round_.revision, targets, unresolved, round_.slices, now)
        status, ours_changed, events = _with_our_conditions(round_, plan.status, now)
        if not plan.changed and not ours_changed:
            return
        body = {**round_.ds, "status": status}
        await self._client.update(DISAGGREGATEDSETS, body, "status")
        ref = object_ref(round_.ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)
        for event in events:
            self._recorder.record(ref, event.type, event.reason, event.action, event.message)


def _with_our_conditions(
    round_: _Round, status: dict[str, Any], now: datetime
) -> tuple[dict[str, Any], bool, list[ControllerEvent]]:
    """This project's conditions on the DS status (a DS that opts in to nothing never has them):
    a bad annotation value flagged (webhooks off), and SurgeFallback."""
    ds = {**round_.ds, "status": status}
    changed, events = False, list[ControllerEvent]()
    flagged = statuswrite.ds_annotation_status(ds, now)
    if flagged is not None:
        status, events, changed = flagged[0], list(flagged[1]), True
    status, surge_changed, surge_events = statuswrite.surge_fallback_status(ds, status, round_.surge, now)
    return status, changed or surge_changed, [*events, *surge_events]
