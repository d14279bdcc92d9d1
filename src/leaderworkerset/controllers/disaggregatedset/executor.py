"""One coordinated-rollout step of one slice: the thin I/O around `decide_rollout`.

The planner decides; this module records upstream's events, applies the decision with merge
patches (every scale-down before any scale-up, so the surge limit holds between the calls) and asks
to be called again after 1 s. On completion it deletes the slice's drained old-revision children.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.children import Children
from leaderworkerset.core.disaggregated.children import build_child, old_children
from leaderworkerset.core.disaggregated.rollout import (
    DsRolloutDecision,
    ScaleChange,
    decide_rollout,
    without_surge_role,
)
from leaderworkerset.core.disaggregated.rollout_inputs import child_views, role_targets, scales_during_rollout
from leaderworkerset.core.objects import Obj, lws_replicas, name_of
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.events import EventRecorder, ObjectReference, object_ref

ROLLOUT_REQUEUE_SECONDS = 1.0


class RolloutExecutor:
    def __init__(self, children: Children, recorder: EventRecorder) -> None:
        self._children = children
        self._recorder = recorder

    async def step(
        self,
        ds: Obj,
        slice_index: int,
        revision: str,
        targets: Mapping[str, int],
        mine: Sequence[Obj],
        *,
        without_surge: bool = False,
    ) -> Result | None:
        """Advance the rollout of one slice; None once it completed (old children deleted).
        `without_surge`: the surge was given back (capacity-aware surge), every role rolls without it."""
        roles = role_targets(ds, targets)
        if without_surge:
            roles = [without_surge_role(role) for role in roles]
        decision = decide_rollout(revision, roles, child_views(mine), advance=scales_during_rollout(ds))
        ref = object_ref(ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)
        by_name = {name_of(lws): lws for lws in mine}
        await self._backfill(ds, ref, decision, by_name)
        if decision.kind == "create":
            await self._create_target(ds, ref, slice_index, revision, decision)
            return Result(requeue_after=ROLLOUT_REQUEUE_SECONDS)
        # While a revision is the target its initial-replicas follows the desired count (scaler
        # writes included); it freezes once a newer revision makes it old.
        for lws_name, value in decision.sync_initial:
            await self._children.set_initial_replicas(ds, by_name[lws_name], value)
        if decision.kind == "complete":
            note = decision.message or c.MSG_ROLLING_UPDATE_COMPLETED % revision
            self._recorder.normal(ref, c.EVENT_ROLLING_UPDATE_COMPLETED, c.EVENT_ACTION_UPDATE, note)
            await self._delete_drained(ref, revision, mine)
            return None
        if decision.kind == "blocked" and decision.message:
            self._recorder.normal(ref, c.EVENT_REVISION_DRAIN_BLOCKED, c.EVENT_ACTION_WAIT, decision.message)
        if decision.kind == "scale":
            await self._scale(ds, ref, decision.scale_down, by_name, c.EVENT_SCALING_DOWN, c.MSG_SCALING_DOWN)
            await self._scale(ds, ref, decision.scale_up, by_name, c.EVENT_SCALING_UP, c.MSG_SCALING_UP)
        return Result(requeue_after=ROLLOUT_REQUEUE_SECONDS)

    async def _create_target(
        self,
        ds: Obj,
        ref: ObjectReference,
        slice_index: int,
        revision: str,
        decision: DsRolloutDecision,
    ) -> None:
        if decision.started:
            note = c.MSG_ROLLING_UPDATE_STARTED % revision
            self._recorder.normal(ref, c.EVENT_ROLLING_UPDATE_STARTED, c.EVENT_ACTION_UPDATE, note)
        roles = {str(role.get("name")): role for role in (ds.get("spec") or {}).get("roles") or []}
        for role_name, initial in decision.create:
            body = build_child(ds, roles[role_name], slice_index, revision, replicas=0, initial=initial)
            await self._children.create(ds, body)

    async def _backfill(
        self, ds: Obj, ref: ObjectReference, decision: DsRolloutDecision, by_name: Mapping[str, Obj]
    ) -> None:
        for lws_name, value in decision.backfill:
            lws = by_name[lws_name]
            note = c.MSG_INITIAL_REPLICAS_MISSING % (lws_name, c.ANNOTATION_DS_INITIAL_REPLICAS, value)
            self._recorder.warning(ref, c.EVENT_INITIAL_REPLICAS_MISSING, c.EVENT_ACTION_RECOVER, note)
            await self._children.set_initial_replicas(ds, lws, value)

    async def _scale(
        self,
        ds: Obj,
        ref: ObjectReference,
        changes: Sequence[ScaleChange],
        by_name: Mapping[str, Obj],
        reason: str,
        message: str,
    ) -> None:
        for change in changes:
            lws = by_name[change.lws]
            current = lws_replicas(lws)
            if current == change.replicas:
                continue
            await self._children.scale(ds, lws, change.replicas)
            note = message % (change.role, change.lws, current, change.replicas)
            self._recorder.normal(ref, reason, c.EVENT_ACTION_UPDATE, note)

    async def _delete_drained(self, ref: ObjectReference, revision: str, mine: Sequence[Obj]) -> None:
        for lws in old_children(mine, revision):
            if lws_replicas(lws) != 0:
                continue  # only a fully drained child may go
            await self._children.delete(lws)
            note = c.MSG_LWS_DELETED_DRAINED % name_of(lws)
            self._recorder.normal(ref, c.EVENT_LWS_DELETED, c.EVENT_ACTION_DELETE, note)
