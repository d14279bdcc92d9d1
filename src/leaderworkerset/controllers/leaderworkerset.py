"""The LeaderWorkerSet controller (spec §3.A), Ordinal identity: the I/O shell around `core`.

One reconcile of `<namespace>/<lws>`:
  1. read the LWS and its leader StatefulSet from the caches (a terminating StatefulSet: wait 5 s);
  2. find or create the current ControllerRevision, and a new one when the templates changed;
  3. decide the leader StatefulSet's partition and replicas (the rolling update) and apply it with
     server-side apply (field manager `lws`);
  4. ensure the shared headless Service;
  5. write the status (counts, conditions) when it changed, and record the condition event;
  6. once a rollout is done, delete the revisions of other keys.

All decisions are `core` functions; this module reads caches, writes through the API and records
events. Hash identity (spec §3.B) takes `_reconcile_hash`: the leaders are a Deployment `<lws>`,
and the status is read from it (core/hashidentity.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext

# The event helpers live in controllers.events; re-exported here for the modules that first
# imported them from this one.
from leaderworkerset.controllers.events import error_text as error_text
from leaderworkerset.controllers.events import lws_ref as lws_ref
from leaderworkerset.controllers.events import record as record
from leaderworkerset.controllers.informers import Obj, SharedInformers
from leaderworkerset.controllers.memos import AppliedIntents, RecentRevisions, WriteMemo
from leaderworkerset.controllers.restartbudget import mutate_restart_counts
from leaderworkerset.controllers.rolloutmetrics import RolloutMetrics, RolloutTracker, new_rollout_metrics
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.controllers.scheduling.prerequisites import reconcile_prerequisites
from leaderworkerset.core import gojson, notready
from leaderworkerset.core.backoff import backoff_error, invalid_backoff_event, invalid_message
from leaderworkerset.core.budget import (
    BudgetError,
    Counts,
    prune_hash_counts,
    prune_other_revisions,
    prune_settled_counts,
    restart_counts,
)
from leaderworkerset.core.diagnosis import diagnose_group
from leaderworkerset.core.groups import (
    ControllerEvent,
    group_states,
    is_deleting,
    is_leader_pod,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.core.hashidentity import is_hash, leader_deployment, plan_hash_status
from leaderworkerset.core.notready import not_ready_events_error
from leaderworkerset.core.revision import (
    RevisionMatchCache,
    owned_revisions,
    plan_revision,
    revision_key,
    revisions_to_truncate,
)
from leaderworkerset.core.rollout import (
    TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS,
    LeaderStatefulSetView,
    RolloutDecision,
    after_apply_events,
    lws_replicas,
    lws_size,
    plan_rollout_for,
    rollout_budget,
)
from leaderworkerset.core.rolloutcontrol import (
    NO_ROLLOUT_CONTROL,
    OUR_CONDITIONS,
    RolloutControl,
    Stall,
    check_deadline,
    held_decision,
    last_progress,
    rollout_conditions,
    rollout_control,
    waiting_ordinals,
)
from leaderworkerset.core.services import shared_service
from leaderworkerset.core.statefulsets import leader_statefulset
from leaderworkerset.core.status import (
    format_time,
    invalid_annotation_conditions,
    invalid_spec_conditions,
    plan_status,
)
from leaderworkerset.core.termination import worker_statefulsets_to_delete_with_lws
from leaderworkerset.core.workloads import scheduling_template_annotations
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.controller import Controller, Result, label_mapper, own_key, owner_mapper
from leaderworkerset.runtime.errors import (
    ApiStatusError,
    is_already_exists,
    is_conflict,
    is_not_found,
    outcome_unknown,
)
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import MetaLike, ObjectKey
from leaderworkerset.runtime.projections import Pod
from leaderworkerset.runtime.reflector import FuncHandler
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    SERVICES,
    STATEFULSETS,
)

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "leaderworkerset"
DEFAULT_MAX_CONCURRENT = 4


@dataclass
class _Round:
    """What one reconcile learned so far, passed between its steps."""

    lws: Obj
    key: ObjectKey
    leader_sts: Obj | None
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
    leader_pods: list[Obj] | None = None
    statefulsets: list[Obj] | None = None

    @property
    def revision_key(self) -> str:
        return revision_key(self.revision) if self.revision is not None else ""


class LeaderWorkerSetReconciler:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        clock: Clock,
        *,
        provider: SchedulerProvider | None = None,
        rollout_metrics: RolloutMetrics | None = None,
    ) -> None:
        self._provider = provider
        self._rollouts = None if rollout_metrics is None else RolloutTracker(rollout_metrics)
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._clock = clock
        self._revision_matches = RevisionMatchCache()
        self.leader_sts_memo = WriteMemo()
        self.leader_deploy_memo = WriteMemo()
        self.leader_intents = AppliedIntents()
        # Our own status writes, until the LWS watch delivers them: a reconcile right after a write
        # would otherwise PUT again from the stale cached copy and conflict (issue 14: 45 of 92
        # status PUTs answered 409 in a 250-group create).
        self.lws_memo = WriteMemo()
        self.recent_revisions = RecentRevisions()

    async def reconcile(self, key: ObjectKey) -> Result | None:
        lws = self._informers.lws.store.get(key)
        if lws is not None:
            lws = self.lws_memo.freshest(key, lws)
        if lws is not None and is_deleting(lws):
            await self._delete_workers_in_parallel(lws)
        if lws is None or is_deleting(lws):
            if self._rollouts is not None:
                self._rollouts.forget(key)
            return None  # children go away through garbage collection
        if await self._annotation_conditions(lws):
            return Result(requeue=True)  # the status moved on: the next round reads it
        try:
            return await self._reconcile_live(key, lws)
        except Exception as err:
            problem = spec_problem(err)
            if problem is not None:
                await self._report_invalid_spec(lws, problem)
            raise  # retried with backoff; a fixed spec comes back through the watch

    async def _reconcile_live(self, key: ObjectKey, lws: Obj) -> Result | None:
        if is_hash(lws):
            return await self._reconcile_hash(key, lws)
        leader_sts = self._leader_statefulset(key)
        if leader_sts is not None and is_deleting(leader_sts):
            return Result(requeue_after=TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS)
        round_ = _Round(lws=lws, key=key, leader_sts=leader_sts)
        if not await self._ensure_revision(round_):
            return None  # going away: its deletion brings the next event
        retry = await self._reconcile_scheduling(round_)
        if retry is not None:
            return retry
        decision = self._control_rollout(round_, self._plan_rollout(round_))
        await self._apply_leader_statefulset(round_, decision)
        await self._ensure_shared_service(round_)
        try:
            update_done = await self._update_status(round_)
        except Exception as err:
            if is_conflict(err):
                return Result(requeue=True)  # a newer LWS is on its way through the watch
            raise
        if update_done:
            await self._truncate_history(round_)
            await self._prune_restart_counts(round_)
        if round_.requeue_after is not None:
            return Result(requeue_after=round_.requeue_after)  # when the progress deadline falls
        return None

    async def _annotation_conditions(self, lws: Obj) -> bool:
        """Flag (or clear) each of our annotations whose value cannot be used (restart back-off,
        not-ready events) in a condition of our own; True when the status was written. An LWS
        without a bad value, now or before, is never written here."""
        now = format_time(self._clock.wall())
        backoff, not_ready = backoff_error(lws), not_ready_events_error(lws)
        checks = (
            (
                ext.CONDITION_RESTART_BACKOFF_INVALID,
                invalid_message(backoff) if backoff else None,
                invalid_backoff_event(backoff) if backoff else None,
            ),
            (
                ext.CONDITION_NOT_READY_EVENTS_INVALID,
                notready.invalid_message(not_ready) if not_ready else None,
                notready.invalid_event(not_ready) if not_ready else None,
            ),
        )
        current, events = lws, []
        changed = False
        for condition_type, message, event in checks:
            conditions = invalid_annotation_conditions(current, condition_type, message, now)
            if conditions is None:
                continue
            changed = True
            current = {**current, "status": {**(current.get("status") or {}), "conditions": conditions}}
            if event is not None:
                events.append(event)
        if not changed:
            return False
        status = dict(current.get("status") or {})
        if not status.get("conditions"):
            status.pop("conditions", None)
        body = {**lws, "apiVersion": c.LWS_API_VERSION, "kind": c.LWS_KIND, "status": status}
        try:
            await self._client.update(LEADERWORKERSETS, body, "status")
        except Exception as err:
            if not is_conflict(err):
                raise
        for event in events:
            record(self._recorder, lws, event)
        return True

    async def _report_invalid_spec(self, lws: Obj, problem: str) -> None:
        """Log, Warning event and Progressing=False (InvalidSpec) for an LWS we cannot act on as
        written: nothing else tells its owner why no group appears or changes (ground rule 3)."""
        log.warning("LeaderWorkerSet cannot be reconciled as written", error=problem)
        self._recorder.warning(lws_ref(lws), c.REASON_INVALID_SPEC, c.EVENT_ACTION_RECONCILE, problem)
        status = dict(lws.get("status") or {})
        generation = int((lws.get("metadata") or {}).get("generation") or 0)
        conditions, changed = invalid_spec_conditions(
            status.get("conditions") or [], problem, generation, self._clock.wall()
        )
        if not changed:
            return
        body = {
            **lws,
            "apiVersion": c.LWS_API_VERSION,
            "kind": c.LWS_KIND,
            "status": {**status, "conditions": conditions},
        }
        try:
            await self._client.update(LEADERWORKERSETS, body, "status")
        except Exception as err:
            if not is_conflict(err) and not is_not_found(err):
                raise
            # A newer LWS is on its way through the watch; its reconcile reports it again.

    # ----- Hash identity (spec §3.B): the leader Deployment ----------------------------------------
    async def _reconcile_hash(self, key: ObjectKey, lws: Obj) -> Result | None:
        deploy = self.leader_deploy_memo.freshest(
            key,
            self._informers.deployment(key.namespace, key.name),
            self._informers.deployments.store.resource_version,
        )
        if deploy is not None and is_deleting(deploy):
            return Result(requeue_after=TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS)
        # The Deployment carries the revision label exactly where the leader StatefulSet does.
        round_ = _Round(lws=lws, key=key, leader_sts=deploy)
        if not await self._ensure_revision(round_):
            return None  # going away: its deletion brings the next event
        leaders = self._informers.set_leader_pods(key.namespace, key.name)
        await self._prune_hash_counts(round_, leaders)
        # B4: the Workload (and the whole-set PodGroup) before any leader exists; per-group
        # PodGroups come from the pod controller once admission has drawn the group key.
        retry = await self._reconcile_scheduling(round_)
        if retry is not None:
            return retry
        applied = await self._apply_leader_deployment(round_, deploy)
        await self._ensure_shared_service(round_)
        lws = round_.lws  # the scheduling condition write may have moved it on
        plan = plan_hash_status(lws, applied, leaders, self._clock.wall())
        # Rollout control is Ordinal-only: on a Hash set its annotations are reported, not acted on.
        round_.lws, round_.control = lws, rollout_control(lws)
        status, control_changed, control_events = self._with_rollout_conditions(round_, plan.status)
        if plan.changed or control_changed:
            body = {**lws, "apiVersion": c.LWS_API_VERSION, "kind": c.LWS_KIND, "status": status}
            try:
                self.lws_memo.remember(key, await self._client.update(LEADERWORKERSETS, body, "status"))
            except Exception as err:
                if is_conflict(err):
                    return Result(requeue=True)
                raise
            if plan.event is not None:
                record(self._recorder, lws, plan.event)
            for event in control_events:
                record(self._recorder, lws, event)
        if plan.update_done:
            await self._truncate_history(round_)
            await self._prune_restart_counts(round_)
        return None

    async def _reconcile_scheduling(self, round_: _Round) -> Result | None:
        """A12/B4: scheduling prerequisites before the leader workload; a Result means retry."""
        try:
            round_.lws = await reconcile_prerequisites(
                self._provider,
                self._client,
                self._recorder,
                round_.lws,
                replicas=lws_replicas(round_.lws),
                revision=round_.revision_key,
                clock=self._clock,
            )
        except Exception as err:
            if is_conflict(err):
                return Result(requeue=True)  # the condition write raced a newer LWS
            raise
        return None

    async def _prune_hash_counts(self, round_: _Round, leaders: list[Obj]) -> None:
        """Counts of the current revision that no live group can claim any more go (B3)."""
        replicas, key = lws_replicas(round_.lws), round_.revision_key
        surge = rollout_budget(round_.lws).surge

        def prune(counts: Counts) -> bool:
            return prune_hash_counts(counts, key, leaders, replicas=replicas, surge=surge)

        await self._mutate_counts_if(round_, prune)

    async def _apply_leader_deployment(self, round_: _Round, existing: Obj | None) -> Obj:
        body = leader_deployment(round_.lws, revision_key=round_.revision_key)
        if existing is not None and self.leader_intents.unchanged(round_.key, body, existing):
            return existing
        try:
            applied = await self._client.apply(DEPLOYMENTS, body)
        except Exception as err:
            self._record_apply_failure(
                round_, err, c.MSG_FAILED_CREATE_LEADER_DEPLOYMENT, c.MSG_FAILED_UPDATE_LEADER_DEPLOYMENT
            )
            raise
        self.leader_deploy_memo.remember(round_.key, applied)
        self.leader_intents.remember(round_.key, body, applied)
        if existing is None:
            record(
                self._recorder,
                round_.lws,
                ControllerEvent(
                    c.EVENT_TYPE_NORMAL,
                    c.EVENT_GROUPS_PROGRESSING,
                    c.EVENT_ACTION_CREATE,
                    c.MSG_CREATED_LEADER_DEPLOYMENT % round_.key.name,
                    None if round_.revision is None else ("ControllerRevision", name_of(round_.revision)),
                ),
            )
        return applied

    # ----- reads ------------------------------------------------------------------------------------
    def _set_leader_pods(self, round_: _Round) -> list[Obj]:
        if round_.leader_pods is None:
            round_.leader_pods = self._informers.set_leader_pods(round_.key.namespace, round_.key.name)
        return round_.leader_pods

    def _set_statefulsets(self, round_: _Round) -> list[Obj]:
        if round_.statefulsets is None:
            round_.statefulsets = self._informers.set_statefulsets(round_.key.namespace, round_.key.name)
        return round_.statefulsets

    def _leader_statefulset(self, key: ObjectKey) -> Obj | None:
        return self.leader_sts_memo.freshest(
            key,
            self._informers.statefulset(key.namespace, key.name),
            self._informers.statefulsets.store.resource_version,
        )

    def _revisions(self, key: ObjectKey) -> list[Obj]:
        cached = self._informers.set_revisions(key.namespace, key.name)
        return self.recent_revisions.merged(cached, key.namespace, key.name)

    # ----- step 2: revisions ----------------------------------------------------------------------
    async def _ensure_revision(self, round_: _Round) -> bool:
        """Find or create the round's revision; False when the LWS turns out to be going away."""
        await self._settle_uncertain_revisions(round_.key)
        plan = plan_revision(
            round_.lws, round_.leader_sts, self._revisions(round_.key), self._revision_matches
        )
        if plan.create and round_.leader_sts is not None and not await self._still_live(round_.key):
            # A set deleted in the foreground loses its revisions first: a cached LWS that lags the
            # revision cache would otherwise create one again for a set that is going (issue 12).
            return False
        for revision, event in plan.create:
            await self._create_revision(revision)
            record(self._recorder, round_.lws, event)
        round_.revision, round_.revision_created = plan.revision, plan.updated
        return True

    async def _still_live(self, key: ObjectKey) -> bool:
        """A fresh read: the LWS exists and is not being deleted (once per revision created for a
        set that already has its leader StatefulSet: a template change or a lost revision)."""
        fresh = await self._client.get_or_none(LEADERWORKERSETS, key.namespace, key.name)
        return fresh is not None and not is_deleting(fresh)

    async def _create_revision(self, revision: Mapping[str, Any]) -> None:
        # The data goes out as Go renders it, so the API server stores exactly the hashed bytes.
        body = {**revision, "data": msgspec.Raw(gojson.dumps(revision["data"]))}
        try:
            created = await self._client.create(CONTROLLER_REVISIONS, body)
        except Exception as err:
            if not is_already_exists(err):
                if outcome_unknown(err):
                    self.recent_revisions.add_uncertain(dict(revision))
                raise
            created = dict(revision)  # a same-named revision exists: the watch will show it
        self.recent_revisions.add(created)

    async def _settle_uncertain_revisions(self, key: ObjectKey) -> None:
        """Read back the revisions whose create lost its answer, unless the cache has them now."""
        pending = self.recent_revisions.uncertain(key.namespace, key.name)
        if not pending:
            return
        cached = {name_of(r) for r in self._informers.set_revisions(key.namespace, key.name)}
        for pending_key in pending:
            found = None
            if pending_key.name not in cached:
                found = await self._client.get_or_none(
                    CONTROLLER_REVISIONS, pending_key.namespace, pending_key.name
                )
            self.recent_revisions.settle(pending_key, found)

    # ----- step 3: the leader StatefulSet ---------------------------------------------------------
    def _plan_rollout(self, round_: _Round) -> RolloutDecision:
        leader_pods: list[Obj] = []
        statefulsets: list[Obj] = []
        if round_.leader_sts is not None:
            # Only read mid-rollout, but cheap enough to gather every time from the indexes.
            leader_pods = self._set_leader_pods(round_)
            statefulsets = self._set_statefulsets(round_)
        return plan_rollout_for(
            round_.lws,
            round_.leader_sts,
            revision_key=round_.revision_key,
            revision_created=round_.revision_created,
            leader_pods=leader_pods,
            statefulsets=statefulsets,
        )

    def _control_rollout(self, round_: _Round, decision: RolloutDecision) -> RolloutDecision:
        """Pause and progress deadline (opt-in): hold `decision` where the StatefulSet already is."""
        lws, key = round_.lws, round_.key
        round_.control = control = rollout_control(lws)
        revisions = owned_revisions(lws, self._revisions(key))
        round_.under_way = any(revision_key(r) != round_.revision_key for r in revisions)
        round_.decision = decision
        if round_.leader_sts is None or (not control.paused and control.deadline_seconds is None):
            return decision
        sts = LeaderStatefulSetView.of(round_.leader_sts)
        budget = rollout_budget(lws)

        def held() -> RolloutDecision:
            round_.decision = held_decision(
                decision, lws_name=key.name, sts=sts, budget=budget, revision_created=round_.revision_created
            )
            return round_.decision

        if control.paused:
            return held()
        if round_.revision_created or not round_.under_way:
            return decision  # a new template starts a fresh step; no rollout, no deadline
        pods = self._informers.set_pods(key.namespace, key.name)  # the stall's diagnosis reads workers
        statefulsets = self._set_statefulsets(round_)
        states = group_states(
            lws_name=key.name,
            sts_replicas=sts.replicas,
            size=lws_size(lws),
            revision_key=round_.revision_key,
            leader_pods=self._set_leader_pods(round_),
            statefulsets=statefulsets,
        )
        waiting = waiting_ordinals(states, budget)
        since = last_progress(
            revision=round_.revision,
            revision_key=round_.revision_key,
            pods=pods,
            conditions=(lws.get("status") or {}).get("conditions") or [],
        )
        check = check_deadline(
            seconds=control.deadline_seconds,
            under_way=round_.under_way,
            waiting=waiting,
            since=since,
            now=self._clock.wall(),
        )
        round_.requeue_after = check.requeue_after
        if not check.exceeded:
            return decision
        ordinal = waiting[0]
        name = f"{key.name}-{ordinal}"
        diagnosis = diagnose_group(
            lws=lws,
            leader=next((p for p in pods if is_leader_pod(p) and name_of(p) == name), None),
            worker_sts=next((s for s in statefulsets if name_of(s) == name), None),
            pods=[
                p
                for p in pods
                if (p.get("metadata") or {}).get("labels", {}).get(c.LABEL_GROUP_INDEX) == str(ordinal)
            ],
            failures={},
        )
        round_.stall = Stall(ordinal, len(waiting), int(control.deadline_seconds or 0), diagnosis)
        return held()

    async def _apply_leader_statefulset(self, round_: _Round, decision: RolloutDecision) -> None:
        for event in decision.events:
            record(self._recorder, round_.lws, event)
        body = leader_statefulset(
            round_.lws,
            partition=decision.partition,
            replicas=decision.replicas,
            revision_key=round_.revision_key,
            extra_template_annotations=scheduling_template_annotations(round_.lws),
        )
        if self.leader_intents.unchanged(round_.key, body, round_.leader_sts):
            return  # nothing to change, and no partition moved: no event either
        try:
            applied = await self._client.apply(STATEFULSETS, body)
        except Exception as err:
            self._record_apply_failure(round_, err)
            raise
        self.leader_sts_memo.remember(round_.key, applied)
        self.leader_intents.remember(round_.key, body, applied)
        round_.applied_sts = applied
        previous = None if round_.leader_sts is None else LeaderStatefulSetView.of(round_.leader_sts)
        for event in after_apply_events(
            lws_name=round_.key.name,
            previous=previous,
            partition=decision.partition,
            revision_created=round_.revision_created,
            revision_name=None if round_.revision is None else name_of(round_.revision),
        ):
            record(self._recorder, round_.lws, event)

    def _record_apply_failure(
        self,
        round_: _Round,
        err: Exception,
        create_message: str = c.MSG_FAILED_CREATE_LEADER_STS,
        update_message: str = c.MSG_FAILED_UPDATE_LEADER_STS,
    ) -> None:
        """FailedCreate or FailedUpdate for the leader workload (StatefulSet, or Hash Deployment)."""
        name = round_.key.name
        if round_.leader_sts is None:
            reason, action, message = c.EVENT_FAILED_CREATE, c.EVENT_ACTION_CREATE, create_message
        else:
            reason, action, message = c.EVENT_FAILED_UPDATE, c.EVENT_ACTION_UPDATE, update_message
        note = message.replace("%v", "%s") % (name, error_text(err))
        self._recorder.warning(lws_ref(round_.lws), reason, action, note)

    # ----- step 4: the shared headless Service ----------------------------------------------------
    async def _ensure_shared_service(self, round_: _Round) -> None:
        service = shared_service(round_.lws)
        if service is None or self._informers.has_service(round_.key.namespace, round_.key.name):
            return
        try:
            await self._client.create(SERVICES, service)
        except Exception as err:
            if is_already_exists(err):
                return
            note = c.MSG_FAILED_CREATE_HEADLESS_SERVICE.replace("%v", "%s") % error_text(err)
            self._recorder.warning(lws_ref(round_.lws), c.EVENT_FAILED_CREATE, c.EVENT_ACTION_CREATE, note)
            raise

    async def _delete_workers_in_parallel(self, lws: Obj) -> None:
        """podTerminationPolicy Parallel (A2): the workers go together with their leaders."""
        statefulsets = self._informers.set_statefulsets(namespace_of(lws), name_of(lws))
        for sts in worker_statefulsets_to_delete_with_lws(lws, statefulsets):
            await self._client.delete_incarnation(STATEFULSETS, namespace_of(sts), name_of(sts), uid_of(sts))

    # ----- step 5: status -------------------------------------------------------------------------
    async def _update_status(self, round_: _Round) -> bool:
        name = round_.key.name
        leader_pods = self._set_leader_pods(round_)
        workers = {name_of(sts): sts for sts in self._set_statefulsets(round_) if name_of(sts) != name}
        plan = plan_status(
            round_.lws,
            round_.applied_sts or round_.leader_sts or {},
            revision_key=round_.revision_key,
            leader_pods=leader_pods,
            worker_statefulsets=workers,
            now=self._clock.wall(),
        )
        status, control_changed, control_events = self._with_rollout_conditions(round_, plan.status)
        changed = plan.changed or control_changed
        if changed:
            # PUT with the cached resourceVersion: a stale read conflicts instead of going backwards.
            body = {
                **round_.lws,
                "apiVersion": c.LWS_API_VERSION,  # list items of some kinds come without them
                "kind": c.LWS_KIND,
                "status": status,
            }
            self.lws_memo.remember(round_.key, await self._client.update(LEADERWORKERSETS, body, "status"))
            if plan.event is not None:
                record(self._recorder, round_.lws, plan.event)
            for event in control_events:
                record(self._recorder, round_.lws, event)
        self._observe_rollout(round_, status, plan.update_done)
        return plan.update_done

    def _with_rollout_conditions(
        self, round_: _Round, status: dict[str, Any]
    ) -> tuple[dict[str, Any], bool, tuple[ControllerEvent, ...]]:
        """`status` with our rollout-control conditions merged in (only for a set that opts in or
        still carries them), whether that changed it, and the events of the transitions."""
        stored = status.get("conditions") or []
        if not round_.control.opted_in and not any(cond.get("type") in OUR_CONDITIONS for cond in stored):
            return status, False, ()
        conditions, changed, events = rollout_conditions(
            stored,
            round_.control,
            stall=round_.stall,
            generation=int((round_.lws.get("metadata") or {}).get("generation") or 0),
            now=self._clock.wall(),
            lws_name=round_.key.name,
            partition=self._standing_partition(round_),
            new_step=round_.revision_created,
        )
        if not changed:
            return status, False, ()
        if conditions:
            return {**status, "conditions": conditions}, True, events
        return {k: v for k, v in status.items() if k != "conditions"}, True, events

    @staticmethod
    def _standing_partition(round_: _Round) -> int:
        """Where the rollout stood when this reconcile began: what a pause holds, a resume leaves."""
        if round_.leader_sts is not None:
            return LeaderStatefulSetView.of(round_.leader_sts).partition
        return round_.decision.partition if round_.decision is not None else 0

    def _observe_rollout(self, round_: _Round, status: Mapping[str, Any], update_done: bool) -> None:
        if self._rollouts is None or round_.decision is None:
            return
        self._rollouts.observe(
            round_.key,
            under_way=round_.under_way and not update_done,
            step=(round_.revision_key, round_.decision.partition, round_.decision.replicas),
            ready=int(status.get("readyReplicas") or 0),
            target=lws_replicas(round_.lws),
            now=self._clock.wall(),
        )

    # ----- step 6: revision history ---------------------------------------------------------------
    async def _truncate_history(self, round_: _Round) -> None:
        for revision in revisions_to_truncate(round_.lws, round_.revision_key, self._revisions(round_.key)):
            try:
                await self._client.delete(CONTROLLER_REVISIONS, namespace_of(revision), name_of(revision))
            except Exception as err:
                if not is_not_found(err):
                    raise
            self.recent_revisions.discard(ObjectKey(namespace_of(revision), name_of(revision)))

    # ----- step 7: restart counts of settled groups ----------------------------------------------
    async def _prune_restart_counts(self, round_: _Round) -> None:
        """After a completed rollout, counts of old revisions and removed groups go (A15, C8).

        Decided on the cached LWS first so the steady state costs no read; the write itself is a
        fresh read-modify-write (the pod controller may be counting at the same time).
        """
        replicas, key = lws_replicas(round_.lws), round_.revision_key

        def prune(counts: Counts) -> bool:
            if is_hash(round_.lws):  # Hash keys are group keys, not indexes
                return prune_other_revisions(counts, key)
            return prune_settled_counts(counts, key, replicas)

        await self._mutate_counts_if(round_, prune)

    async def _mutate_counts_if(self, round_: _Round, mutate: Callable[[Counts], bool]) -> None:
        """Decide on the cached LWS (no read in the steady state), write on a fresh read."""
        try:
            needed = mutate(restart_counts(round_.lws))
        except BudgetError as err:
            log.warning("unreadable group restart counts; left as they are", error=str(err))
            return
        if needed:
            await mutate_restart_counts(self._client, round_.key.namespace, round_.key.name, mutate)


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


# ----- wiring ------------------------------------------------------------------------------------------


def _leader_pod_to_lws(meta: MetaLike, obj: object) -> Iterable[ObjectKey]:
    """Leader pods wake their LWS: readiness feeds status even where no StatefulSet controller
    mirrors it into the leader StatefulSet's status (upstream relies on that echo)."""
    if (meta.labels or {}).get(c.LABEL_WORKER_INDEX) != c.LEADER_WORKER_INDEX:
        return ()
    return label_mapper(c.LABEL_SET_NAME)(meta, obj)


def _scheduled_pod_deletions(controller: Controller) -> FuncHandler[Pod]:
    """A deleted pod that joined a PodGroup wakes its LWS: the provider deletes a PodGroup only
    once no pod names it, which with Hash groups (one PodGroup per group key) is the last pod of
    a replaced or scaled-down group, usually a worker removed by garbage collection."""

    def deleted(pod: Pod) -> None:
        meta = pod.metadata
        if c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING not in (meta.annotations or {}):
            return
        for key in label_mapper(c.LABEL_SET_NAME)(meta, pod):
            controller.queue.add(key)

    return FuncHandler(delete=deleted)


def setup(
    manager: Manager,
    informers: SharedInformers,
    *,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    provider: SchedulerProvider | None = None,
) -> Controller:
    """Create the LWS controller, declare its watches and add it to the manager.

    Its times (conditions, rollout deadlines and steps) come from the manager's clock."""
    reconciler = LeaderWorkerSetReconciler(
        manager.client,
        informers,
        manager.event_recorder(c.EVENT_COMPONENT_LWS),
        manager.clock,
        provider=provider,
        rollout_metrics=new_rollout_metrics(manager.metrics.registry),
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    controller.watch(informers.lws, own_key)
    # Owned and labelled StatefulSets: the leader StatefulSet and every worker StatefulSet.
    controller.watch(informers.statefulsets, label_mapper(c.LABEL_SET_NAME))
    controller.watch(informers.services, owner_mapper(c.LWS_KIND, c.LWS_GROUP))
    controller.watch(informers.deployments, owner_mapper(c.LWS_KIND, c.LWS_GROUP))
    controller.watch(informers.pods, _leader_pod_to_lws)
    informers.pods.add_handler(_scheduled_pod_deletions(controller))
    reconciler.leader_sts_memo.forget_on_delete(informers.statefulsets)
    reconciler.leader_deploy_memo.forget_on_delete(informers.deployments)
    reconciler.leader_intents.forget_on_delete(informers.statefulsets)
    reconciler.leader_intents.forget_on_delete(informers.deployments)
    reconciler.lws_memo.forget_on_delete(informers.lws)
    manager.add_controller(controller)
    return controller
