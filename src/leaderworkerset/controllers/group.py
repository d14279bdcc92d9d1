"""The pod (group) controller (spec §3.C), Ordinal identity: restart policies and worker startup.

One reconcile of a pod key `<namespace>/<pod>`:
  1. replay the deletion snapshots of workers with that name (a StatefulSet may already have
     re-created a same-name pod, so the snapshot is the only trace of the failure);
  2. for the live pod: apply the restart policy — a failed group is recreated by deleting its
     leader with Foreground propagation, exactly once per failure;
  3. for a leader: ensure the per-replica Service (UniquePerReplica), then — once the startup
     policy and exclusive placement allow — create its worker StatefulSet from the leader's
     revision. Worker StatefulSets are create-only: a group changes only by being recreated.

Bounded group recovery (maxGroupRestarts, core/budget.py): a recreation first consumes one unit
of the group's budget, decided on fresh reads of the leader and the LWS; a spent budget retains the
group (exhausted leader, cleanup finalizers on every pod) until `recover=true` on the leader, a
scale-down/rollout teardown, or the LWS going away releases it.
Hash identity: the group-replacement gate is lifted in FIFO order (C12) and the leader's
group-ready condition mirrors its worker StatefulSet.
The scheduler provider (if configured) makes the group's PodGroup before its workers exist.
"""

from __future__ import annotations

import datetime
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref, record
from leaderworkerset.controllers.groupmetrics import GroupMetrics, new_group_metrics
from leaderworkerset.controllers.informers import Obj, SharedInformers, as_dict
from leaderworkerset.controllers.ledger import FailureLedger, LedgerNotOwnedError
from leaderworkerset.controllers.memos import StatefulSetDeletions, WriteMemo
from leaderworkerset.controllers.restartbudget import mutate_restart_counts, patch_pod
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core.backoff import (
    BackoffError,
    GroupBackoff,
    backoff_event,
    backoff_policy,
    decide_backoff,
    invalid_backoff_event,
    recreated_state,
    waiting_state,
)
from leaderworkerset.core.budget import (
    BudgetStep,
    ExhaustedStep,
    budget_exceeded_event,
    claim_hash_count,
    claim_patch,
    clear_count,
    decide_budget,
    exhaust_leader_patch,
    exhausted_leader_step,
    group_members,
    hash_teardown_requested,
    hold_pod_patch,
    holds_budget_finalizer,
    max_group_restarts,
    ordinal_teardown_requested,
    raise_count,
    release_pod_patch,
    restart_count_key,
    restart_counts,
)
from leaderworkerset.core.diagnosis import Diagnosis, diagnose_group
from leaderworkerset.core.gang import SchedulingError
from leaderworkerset.core.groups import (
    ControllerEvent,
    controller_owner,
    has_replacement_gate,
    is_deleting,
    is_exhausted,
    is_leader_pod,
    labels_of,
    lws_size,
    name_of,
    namespace_of,
    pod_ready,
    revision_key_of,
    statefulset_ready,
    uid_of,
)
from leaderworkerset.core.hashidentity import (
    GROUP_REPLACEMENT_REQUEUE_SECONDS,
    AdmissionStep,
    admission_event,
    decide_admission,
    group_ready_status_patch,
    is_hash,
    remove_gate_patch,
)
from leaderworkerset.core.ledger import (
    Action,
    LedgerEntry,
    Trigger,
    classify_trigger,
    entry_for,
    group_of,
    needs_node,
    needs_probe_events,
    probe_failed_containers,
)
from leaderworkerset.core.lifecycle import group_milestones, ready_before
from leaderworkerset.core.naming import leader_name_for_worker
from leaderworkerset.core.notready import members_to_diagnose, next_report, wants_not_ready_events
from leaderworkerset.core.restart import (
    FOREIGN_WORKERS_RECHECK_SECONDS,
    MISSING_REVISION_REQUEUE_SECONDS,
    GroupRestartError,
    RestartAction,
    RestartDecision,
    WorkerGate,
    check_group_pod,
    decide_restart,
    exclusive_topology_key,
    foreign_worker_statefulset,
    foreign_worker_statefulset_event,
    misannotated_leader_event,
    orphaned_workers,
    owner_statefulset_name,
    placement_gate,
    replay_deleted_pod,
    restart_lookup,
    startup_gate,
    topology_node_selector,
    worker_belongs_to_leader,
    worker_statefulset_created_event,
    worker_statefulset_failed_event,
)
from leaderworkerset.core.revision import find_revision, revision_spec
from leaderworkerset.core.rollout import lws_replicas
from leaderworkerset.core.services import replica_service
from leaderworkerset.core.statefulsets import require_leader_dns, worker_statefulset
from leaderworkerset.core.termination import (
    WORKER_STATEFULSET_TERMINATING_REQUEUE_SECONDS,
    lingering_worker_pod,
    worker_statefulset_to_delete,
)
from leaderworkerset.core.workloads import scheduling_template_annotations
from leaderworkerset.runtime.client import STRATEGIC_PATCH, KubeClient
from leaderworkerset.runtime.controller import Controller, Result, own_key, owner_mapper
from leaderworkerset.runtime.errors import is_already_exists
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import Pod
from leaderworkerset.runtime.reflector import FuncHandler
from leaderworkerset.runtime.resources import (
    CORE_EVENTS,
    LEADERWORKERSETS,
    NODES,
    PODS,
    SERVICES,
    STATEFULSETS,
)

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "pod"
DEFAULT_MAX_CONCURRENT = 4
# Leaders this process deleted for a group restart, remembered so a stale cache read of the same
# leader cannot delete it (and announce RecreateGroup) a second time.
_DELETED_LEADERS_MEMORY = 10_000
# Worker deletion snapshots waiting for their reconcile; beyond this, the oldest are dropped.
_SNAPSHOT_MEMORY = 10_000
_DELETED_MARK = "1970-01-01T00:00:00Z"
# Leader incarnations whose time to ready was observed (once each).
_OBSERVED_MEMORY = 10_000
# A back-off wait is requeued a little past its end, so the retry is never a hair too early.
_BACKOFF_REQUEUE_MARGIN_SECONDS = 0.05


@dataclass(frozen=True)
class RestartOutcome:
    """`stop`: the pod's reconcile ends here; `wait`: a recreation backs off this many seconds."""

    stop: bool
    wait: float | None = None


@dataclass(frozen=True)
class _Gate:
    wait: float | None = None  # backing off: retry after this long, recreate nothing now
    state: GroupBackoff | None = None  # the back-off state to store with the recreation
    delay: float | None = None  # the delay the recreation waited out


class GroupReconciler:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        provider: SchedulerProvider | None = None,
        *,
        metrics: GroupMetrics | None = None,
        ledger: FailureLedger | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._provider = provider
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._metrics = metrics or new_group_metrics()
        self._ledger = ledger or FailureLedger(client)
        self._clock = clock
        # Groups that were ready before this process started were observed by its predecessor.
        self._started = clock()
        self._snapshots: OrderedDict[ObjectKey, list[Obj]] = OrderedDict()
        self._sts_deletions = StatefulSetDeletions(informers.statefulsets, informers.pods)
        # Worker StatefulSets this process created, until the watch shows them: a reconcile of the
        # same leader in between would otherwise create it again, to an AlreadyExists (issue 14).
        self.created_workers = WriteMemo()
        self._deleted_leaders: OrderedDict[str, None] = OrderedDict()
        self._observed: OrderedDict[str, None] = OrderedDict()
        # The problem last reported per group of a set with not-ready events on (core/notready.py).
        self._said: dict[tuple[str, str], dict[str, Diagnosis]] = {}

    # ----- deletion snapshots (fed by the pod informer) --------------------------------------------
    def remember_deleted(self, pod: Pod) -> None:
        snapshot = as_dict(pod)
        if c.LABEL_SET_NAME not in labels_of(snapshot) or not replay_deleted_pod(snapshot):
            return
        # A pod removed without a grace period arrives without deletionTimestamp; its deletion is
        # still the failure signal the restart policy looks for.
        meta = dict(snapshot.get("metadata") or {})
        meta.setdefault("deletionTimestamp", _DELETED_MARK)
        snapshot["metadata"] = meta
        key = ObjectKey(namespace_of(snapshot), name_of(snapshot))
        self._snapshots.setdefault(key, []).append(snapshot)
        self._snapshots.move_to_end(key)
        while len(self._snapshots) > _SNAPSHOT_MEMORY:
            self._snapshots.popitem(last=False)

    # ----- reconcile ----------------------------------------------------------------------------
    async def reconcile(self, key: ObjectKey) -> Result | None:
        wait = await self._replay_deletions(key)
        result = await self._reconcile_pod(key)
        self._explain_group(key)
        if wait is None:
            return result
        if result is not None and result.requeue_after is not None:
            wait = min(wait, result.requeue_after)
        return Result(requeue_after=wait)

    async def _reconcile_pod(self, key: ObjectKey) -> Result | None:
        pod = self._informers.pod(key.namespace, key.name)
        if pod is None:
            return None
        try:
            check_group_pod(pod)
        except GroupRestartError as err:
            # Retrying cannot help: only a label change can, and it comes back through the watch.
            log.warning("pod cannot be related to a group", error=str(err))
            ref = object_ref(pod, api_version="v1", kind="Pod")
            self._recorder.warning(ref, c.EVENT_INVALID_LABELS, c.EVENT_ACTION_RECONCILE, str(err))
            return None
        lws = self._set_of(pod)
        if is_leader_pod(pod):
            await self._delete_workers_in_parallel(lws, pod)
        if lws is None or is_deleting(lws):
            # Workload teardown, not a failure: release what the budget holds, recreate nothing.
            await self._release_on_teardown(pod)
            return None
        if is_leader_pod(pod) and is_exhausted(pod):
            await self._exhausted_leader(pod, lws)
            return None
        outcome = await self._restart_policy(pod, lws)
        if outcome.wait is not None:
            return Result(requeue_after=outcome.wait)
        if outcome.stop:
            return None
        self._observe_time_to_ready(pod, lws)
        if not is_leader_pod(pod):
            return None
        return await self._reconcile_leader(pod, lws)

    def _explain_group(self, key: ObjectKey) -> None:
        """Opt-in GroupNotReady events: say when the pod's group runs into a problem, and when it is
        ready again (core/notready.py). Reads the caches only; a set without the annotation costs
        one annotation lookup."""
        pod = self._informers.pod(key.namespace, key.name)
        if pod is None or c.LABEL_SET_NAME not in labels_of(pod):
            return
        set_key = (key.namespace, labels_of(pod)[c.LABEL_SET_NAME])
        lws = self._lws_of(pod)
        if lws is None or not wants_not_ready_events(lws):
            self._said.pop(set_key, None)
            return
        group = labels_of(pod).get(c.LABEL_GROUP_INDEX)
        if group is None:
            return
        members = members_to_diagnose(self._informers.group_pods(key.namespace, set_key[1], group))
        leader = members.leader
        try:
            now = diagnose_group(
                lws=lws,
                leader=leader,
                worker_sts=self._informers.statefulset(key.namespace, name_of(leader)) if leader else None,
                pods=members.pods,
                failures={},  # the scheduler's words come from the pods' Unschedulable condition
            )
        except Exception as err:  # an explanation must never stop the group's reconcile
            log.warning("cannot diagnose the group", group=group, error=str(err))
            return
        said_of_set = self._said.setdefault(set_key, {})
        said, event = next_report(group, said_of_set.get(group), now, leader)
        if said is None:
            said_of_set.pop(group, None)
        else:
            said_of_set[group] = said
        if event is not None:
            record(self._recorder, lws, event)

    async def _replay_deletions(self, key: ObjectKey) -> float | None:
        """Apply the restart policy to each deletion snapshot; a failed one is kept for the retry,
        and so is one whose recreation backs off (the StatefulSet may already have replaced the
        pod, so the snapshot is the only trace of the failure): returns that wait."""
        pending = self._snapshots.pop(key, [])
        while pending:
            try:
                outcome = await self._restart_policy(pending[0])
            except Exception:
                self._snapshots[key] = [*pending, *self._snapshots.get(key, [])]
                raise
            if outcome.wait is not None:
                self._snapshots[key] = [*pending, *self._snapshots.get(key, [])]
                return outcome.wait
            pending.pop(0)
        return None

    def _set_of(self, pod: Obj) -> Obj | None:
        """The pod's LWS from the cache (deleting and Hash ones included)."""
        return self._informers.lws.store.get(ObjectKey(namespace_of(pod), labels_of(pod)[c.LABEL_SET_NAME]))

    def _lws_of(self, pod: Obj) -> Obj | None:
        """The LWS whose restart policy applies: present and not deleting."""
        lws = self._set_of(pod)
        return None if lws is None or is_deleting(lws) else lws

    # ----- restart policy -------------------------------------------------------------------------
    async def _restart_policy(self, pod: Obj, lws: Obj | None = None) -> RestartOutcome:
        """Apply the group restart policy: whether the pod's reconcile ends here, or waits."""
        lws = lws or self._lws_of(pod)
        if lws is None:
            return RestartOutcome(stop=False)
        lookup = restart_lookup(lws, pod)
        if lookup is None:
            return RestartOutcome(stop=False)
        namespace = namespace_of(pod)
        owner_sts = (
            self._informers.statefulset(namespace, lookup.owner_statefulset_name)
            if lookup.owner_statefulset_name
            else None
        )
        decision = decide_restart(
            lws,
            pod,
            group_pods=self._informers.group_pods(
                namespace, lookup.group_selector[c.LABEL_SET_NAME], lookup.group_selector[c.LABEL_GROUP_INDEX]
            ),
            leader=self._informers.pod(namespace, lookup.leader_name),
            owner_statefulset=owner_sts,
        )
        wait = None
        if decision.action is RestartAction.DELETE_LEADER:
            wait = await self._recreate_group(lws, pod, namespace, decision)
        return RestartOutcome(stop=decision.stop, wait=wait)

    async def _recreate_group(
        self, lws: Obj, pod: Obj, namespace: str, decision: RestartDecision
    ) -> float | None:
        """Delete the leader to recreate the group — after charging the restart budget, decided on
        fresh reads (a lagging cache must never let a group restart past its limit), and once the
        group's back-off (if the LWS asks for one) allows. Returns the wait while backing off.

        The budget decides first: a spent budget stops the group at once (waiting would only delay
        the inevitable), and a recreation that backs off is not charged until it happens."""
        if decision.leader_uid in self._deleted_leaders:
            return None  # already deleted by us; the cache has not caught up yet
        leader = await self._fresh_pod_named(namespace, decision.leader_name)
        if leader is None or uid_of(leader) != decision.leader_uid:
            return None  # gone (the recreation is done) or replaced by a same-name leader
        fresh_lws = await self._fresh_lws(namespace, name_of(lws))
        if fresh_lws is None or is_deleting(fresh_lws):
            await self._release(leader if is_leader_pod(pod) else pod)
            return None
        if is_deleting(leader):
            return None
        if is_exhausted(leader):
            await self._terminate_exhausted_group(fresh_lws, leader)
            return None
        limit = max_group_restarts(fresh_lws)
        budget = decide_budget(restart_counts(fresh_lws), leader, limit) if limit is not None else None
        trigger = await self._classify(pod)
        if budget is not None and budget.step is BudgetStep.EXHAUST:
            entry = entry_for(
                trigger, group=group_of(leader), action=Action.BUDGET_EXHAUSTED, when=self._now(),
                leader_uid=uid_of(leader),
            )  # fmt: skip
            await self._record(fresh_lws, entry)
            await self._terminate_exhausted_group(fresh_lws, leader)
            return None
        # One instant for the back-off state and the ledger entry, so the ledger's gaps between
        # recreations are the delays the back-off measured (the budget writes below take time).
        decided_at = self._clock()
        gate = await self._backoff_gate(fresh_lws, leader, trigger, now=decided_at)
        if gate.wait is not None:
            return gate.wait
        if budget is not None:
            if not budget.claimed:
                # Conditional on the fresh read: a concurrent change conflicts and is retried.
                leader = await self._client.merge_patch(
                    PODS, namespace, name_of(leader), claim_patch(leader, budget.count)
                )
            await mutate_restart_counts(
                self._client,
                namespace,
                name_of(lws),
                lambda counts: raise_count(counts, budget.key, budget.count),
            )
        entry = entry_for(
            trigger, group=group_of(leader), action=Action.RECREATED, when=_utc(decided_at),
            leader_uid=uid_of(leader), delay_seconds=gate.delay,
        )  # fmt: skip
        # Written before the delete: the back-off state must name this incarnation before it goes.
        await self._record(fresh_lws, entry, backoff=gate.state)
        if await self._delete_leader(
            lws, namespace, decision.leader_name, decision.leader_uid, decision.event
        ):
            self._metrics.recreations.labels(namespace, name_of(lws), str(trigger.cause)).inc()
        return None

    # ----- failure ledger and restart back-off --------------------------------------------------
    def _now(self) -> datetime.datetime:
        return _utc(self._clock())

    async def _classify(self, pod: Obj) -> Trigger:
        """The trigger's cause; the node and the probe events are read only when they can change
        it (a bare deletion; an exit code a probe kill leaves), once per recreation. A failed read
        leaves the cause less specific, never blocks the recreation."""
        node: Obj | None = None
        probes: set[str] = set()
        try:
            if needs_node(pod):
                node = await self._client.get_or_none(
                    NODES, None, str((pod.get("spec") or {}).get("nodeName"))
                )
            if needs_probe_events(pod) is not None:
                selector = f"involvedObject.uid={uid_of(pod)},reason=Unhealthy"
                events = await self._client.list(CORE_EVENTS, namespace_of(pod), field_selector=selector)
                probes = probe_failed_containers(events)
        except Exception as err:
            log.warning("failure cause read incomplete", pod=name_of(pod), error=error_text(err))
        return classify_trigger(pod, node=node, probe_failures=probes)

    async def _record(self, lws: Obj, entry: LedgerEntry, *, backoff: GroupBackoff | None = None) -> None:
        """Write the ledger. Without back-off state a failed write is logged and the recreation goes
        on (the ledger is a record, not a gate); back-off state must be stored, so its failure is
        the reconcile's error and is retried."""
        try:
            await self._ledger.record(lws, entry=entry, group=entry.group, backoff=backoff)
        except LedgerNotOwnedError as err:
            log.warning("failure ledger skipped", lws=name_of(lws), error=str(err))
        except Exception as err:
            if backoff is not None:
                raise
            log.warning("failure ledger not written", lws=name_of(lws), error=error_text(err))

    async def _backoff_gate(self, lws: Obj, leader: Obj, trigger: Trigger, *, now: float) -> _Gate:
        """Whether the LWS's restart back-off lets this recreation happen `now`."""
        try:
            policy = backoff_policy(lws)
        except BackoffError as err:
            # Admitted with the webhooks off: recreate as upstream does, and say why not backing off.
            record(self._recorder, lws, invalid_backoff_event(err))
            return _Gate()
        if policy is None:
            return _Gate()
        group = group_of(leader)
        state = (await self._ledger.read(lws)).backoff.get(group)
        decision = decide_backoff(policy, state, now=now, leader_uid=uid_of(leader))
        if decision.recreate:
            # A recreation that waited for nothing records no delay (the first of a streak).
            state = recreated_state(decision, now=now, leader_uid=uid_of(leader))
            return _Gate(state=state, delay=decision.delay or None)
        assert state is not None  # decide_backoff only waits after a previous recreation
        if state.waiting_until != decision.not_before:
            # The first look at this failure: record the wait once, not on every retry.
            entry = entry_for(
                trigger, group=group, action=Action.BACKING_OFF, when=_utc(now),
                leader_uid=uid_of(leader), delay_seconds=decision.delay,
            )  # fmt: skip
            await self._record(lws, entry, backoff=waiting_state(state, decision))
            record(self._recorder, lws, backoff_event(leader, decision, now=now))
        return _Gate(wait=decision.remaining(now) + _BACKOFF_REQUEUE_MARGIN_SECONDS)

    def _observe_time_to_ready(self, pod: Obj, lws: Obj) -> None:
        """Observe each phase of a group incarnation's way to ready, once, when it gets there."""
        if is_deleting(pod) or not pod_ready(pod):
            return
        namespace = namespace_of(pod)
        leader_name = name_of(pod) if is_leader_pod(pod) else leader_name_for_worker(pod)
        leader = self._informers.pod(namespace, leader_name) if leader_name else None
        if leader is None or uid_of(leader) in self._observed:
            return
        pods = self._informers.group_pods(
            namespace, name_of(lws), labels_of(leader).get(c.LABEL_GROUP_INDEX, "")
        )
        milestones = group_milestones(leader, pods, lws_size(lws))
        if milestones is None:
            return
        self._observed[uid_of(leader)] = None
        while len(self._observed) > _OBSERVED_MEMORY:
            self._observed.popitem(last=False)
        if ready_before(milestones.ready, self._started):
            return
        for phase, seconds in milestones.durations().items():
            self._metrics.time_to_ready.labels(namespace, name_of(lws), phase).observe(seconds)

    async def _delete_leader(
        self, lws: Obj, namespace: str, name: str, uid: str, event: ControllerEvent | None
    ) -> bool:
        """Foreground deletion (workers go first), preconditioned on the leader's UID so a
        same-name replacement is never hit; at most once per leader incarnation."""
        if not await self._client.delete_incarnation(PODS, namespace, name, uid):
            return False  # gone, or replaced by a same-name leader: nothing left to restart
        self._deleted_leaders[uid] = None
        while len(self._deleted_leaders) > _DELETED_LEADERS_MEMORY:
            self._deleted_leaders.popitem(last=False)
        if event is not None:
            record(self._recorder, lws, event)
        return True

    # ----- restart budget: exhausted groups (C3, C4, C9, C11) ---------------------------------------
    async def _exhausted_leader(self, leader: Obj, lws: Obj) -> None:
        teardown = await self._teardown_requested(leader, lws)
        step = exhausted_leader_step(leader, teardown=teardown)
        if step is ExhaustedStep.RECOVER:
            key = restart_count_key(leader)
            await mutate_restart_counts(
                self._client, namespace_of(leader), name_of(lws), lambda counts: clear_count(counts, key)
            )
        if step in (ExhaustedStep.RELEASE, ExhaustedStep.RECOVER):
            await self._release(leader)
        elif step is ExhaustedStep.TERMINATE:
            await self._terminate_exhausted_group(lws, leader)

    async def _teardown_requested(self, leader: Obj, lws: Obj) -> bool:
        """Scale-down or rollout wants the retained group gone (C11)."""
        namespace = namespace_of(leader)
        if not is_hash(lws):
            return ordinal_teardown_requested(leader, self._informers.statefulset(namespace, name_of(lws)))
        deploy = self._informers.deployment(namespace, name_of(lws))
        leaders = self._informers.set_leader_pods(namespace, name_of(lws))
        teardown = hash_teardown_requested(
            leader,
            desired_revision=revision_key_of(deploy) if deploy is not None else "",
            replicas=lws_replicas(lws),
            leader_pods=leaders,
        )
        if teardown.clear_count:
            key = restart_count_key(leader)
            await mutate_restart_counts(
                self._client, namespace, name_of(lws), lambda counts: clear_count(counts, key)
            )
        return teardown.release

    async def _terminate_exhausted_group(self, lws: Obj, leader: Obj) -> None:
        """Mark and hold the group (leader first, then its members), then delete the leader."""
        leader = await patch_pod(self._client, leader, exhaust_leader_patch) or leader
        for member in self._group_members(leader):
            if is_leader_pod(member) or self._belongs_to(member, leader):
                await patch_pod(self._client, member, hold_pod_patch)
        if is_deleting(leader):
            return
        await self._delete_leader(
            lws, namespace_of(leader), name_of(leader), uid_of(leader), budget_exceeded_event(leader)
        )

    async def _release_on_teardown(self, pod: Obj) -> None:
        """The cache says the LWS is gone or going: confirm with a fresh read before letting a
        retained group go (a lagging LWS cache must not end a retention)."""
        targets = self._release_targets(pod)
        if not any(holds_budget_finalizer(t) for t in targets):
            return
        lws = await self._fresh_lws(namespace_of(pod), labels_of(pod)[c.LABEL_SET_NAME])
        if lws is None or is_deleting(lws):
            await self._release(pod)

    def _release_targets(self, pod: Obj) -> list[Obj]:
        """A leader's whole group (workers first, then the leader), or a worker alone."""
        if not is_leader_pod(pod):
            return [pod]
        targets = self._group_members(pod)
        if all(name_of(t) != name_of(pod) for t in targets):
            targets.append(pod)
        return targets

    async def _release(self, pod: Obj) -> None:
        """Remove the cleanup finalizer: a leader releases its whole group, workers first."""
        for target in self._release_targets(pod):
            if holds_budget_finalizer(target):
                await patch_pod(self._client, target, release_pod_patch)

    def _group_members(self, leader: Obj) -> list[Obj]:
        labels = labels_of(leader)
        pods = self._informers.group_pods(
            namespace_of(leader), labels.get(c.LABEL_SET_NAME, ""), labels.get(c.LABEL_GROUP_INDEX, "")
        )
        return [dict(p) for p in group_members(leader, pods)]

    def _belongs_to(self, worker: Obj, leader: Obj) -> bool:
        sts_name = owner_statefulset_name(worker)
        owner_sts = self._informers.statefulset(namespace_of(worker), sts_name) if sts_name else None
        return worker_belongs_to_leader(worker, leader, owner_sts)

    async def _fresh_pod_named(self, namespace: str, name: str) -> Obj | None:
        return await self._client.get_or_none(PODS, namespace, name)

    async def _fresh_lws(self, namespace: str, name: str) -> Obj | None:
        return await self._client.get_or_none(LEADERWORKERSETS, namespace, name)

    # ----- leader: per-replica Service and worker StatefulSet --------------------------------------
    async def _reconcile_leader(self, leader: Obj, lws: Obj) -> Result | None:
        event = misannotated_leader_event(lws, leader)
        if event is not None:
            record(self._recorder, lws, event)
            return None
        if is_deleting(leader):
            return None
        await self._ensure_replica_service(lws, leader)
        await self._ensure_pod_group(lws, leader)
        if has_replacement_gate(leader) and not await self._admit(lws, leader):
            return Result(requeue_after=GROUP_REPLACEMENT_REQUEUE_SECONDS)
        if startup_gate(lws, leader) is not WorkerGate.PROCEED:
            return None  # size 1, or waiting for a leader update that re-triggers us
        key = ObjectKey(namespace_of(leader), name_of(leader))
        statefulsets = self._informers.statefulsets.store
        cached = self._informers.statefulset(key.namespace, key.name)
        existing = self.created_workers.freshest(key, cached, statefulsets.resource_version)
        if existing is not None and is_deleting(existing):
            # A predecessor's group still going away (C13): build ours only once it is gone.
            return Result(requeue_after=WORKER_STATEFULSET_TERMINATING_REQUEUE_SECONDS)
        if existing is not None and foreign_worker_statefulset(existing, leader):
            self._report_foreign_workers(lws, leader, existing)
            return Result(requeue_after=FOREIGN_WORKERS_RECHECK_SECONDS)
        if existing is not None:
            await self._delete_orphaned_workers(leader, existing)
            # Never updated: a group changes only by being recreated. Hash leaders mirror its
            # readiness into their group-ready condition, which gates the leader's own readiness.
            if is_hash(lws):
                await self._sync_group_ready(leader, statefulset_ready(existing))
            return None
        if placement_gate(lws, leader) is not WorkerGate.PROCEED:
            return None  # the leader's scheduling re-triggers us
        if await self._worker_names_taken(lws, leader):
            return None  # the deletion of that pod wakes this leader (worker_deletion_waker)
        fresh = await self._leader_to_build_from(leader)
        if fresh is None or uid_of(fresh) != uid_of(leader) or is_deleting(fresh):
            return None  # replaced or going away; the watch brings the next event
        revision = find_revision(
            lws, revision_key_of(fresh), self._informers.set_revisions(namespace_of(fresh), name_of(lws))
        )
        if revision is None:
            return Result(requeue_after=MISSING_REVISION_REQUEUE_SECONDS)
        require_leader_dns(fresh)
        if placement_gate(lws, fresh) is not WorkerGate.PROCEED:
            return None  # the leader's scheduling re-triggers us
        return await self._create_worker_statefulset(lws, fresh, revision)

    async def _worker_names_taken(self, lws: Obj, leader: Obj) -> bool:
        """A predecessor's worker pod still holds one of this group's names (issue 14): creating
        the worker StatefulSet now would put kube-controller-manager into exponential back-off.

        Such a pod normally goes with its StatefulSet (the garbage collector deletes it), but the
        collector can miss it across an API server restart (issue 12), and then the name would stay
        taken for good: a pod whose controlling StatefulSet a fresh read shows gone (or replaced)
        is deleted here, guarded by its UID, and its deletion wakes this leader again."""
        namespace = namespace_of(leader)
        taken = lingering_worker_pod(leader, lws_size(lws), lambda name: self._informers.pod(namespace, name))
        if taken is None:
            return False
        log.info("worker pod name still taken, waiting for it to go before creating the worker "
                 "statefulset", namespace=namespace, pod=name_of(leader), worker=taken)  # fmt: skip
        pod = self._informers.pod(namespace, taken)
        owner = controller_owner(pod) if pod is not None else None
        if pod is None or owner is None or is_deleting(pod):
            return True
        fresh = await self._client.get_or_none(STATEFULSETS, namespace, str(owner.get("name", "")))
        gone = fresh is None or uid_of(fresh) != owner.get("uid")
        if gone and await self._client.delete_incarnation(PODS, namespace, taken, uid_of(pod)):
            log.info("deleted a worker pod whose statefulset is gone", pod=taken, namespace=namespace)
        return True

    async def _delete_orphaned_workers(self, leader: Obj, workers: Obj) -> None:
        """Delete worker pods still controlled by the group's previous worker StatefulSet.

        The garbage collector deletes them once that StatefulSet is gone, but it can miss the
        deletion across an API server restart; the new StatefulSet then cannot create its pods under
        their names and the group (and any rollout waiting for it) stalls for good. A fresh read
        first confirms that the name now maps to another StatefulSet, so a lagging cache (one that
        still holds the old StatefulSet) never deletes the new one's pods; each delete is guarded by
        the pod's UID.
        """
        labels = labels_of(leader)
        pods = self._informers.group_pods(
            namespace_of(leader), labels.get(c.LABEL_SET_NAME, ""), labels.get(c.LABEL_GROUP_INDEX, "")
        )
        if not orphaned_workers(workers, pods):
            return
        fresh = await self._client.get_or_none(STATEFULSETS, namespace_of(workers), name_of(workers))
        if fresh is None or is_deleting(fresh):
            return
        for pod in orphaned_workers(fresh, pods):
            if await self._client.delete_incarnation(PODS, namespace_of(pod), name_of(pod), uid_of(pod)):
                log.info(
                    "deleted a worker pod left by the group's previous worker statefulset",
                    pod=name_of(pod), namespace=namespace_of(pod), statefulset=name_of(fresh),
                )  # fmt: skip

    async def _delete_workers_in_parallel(self, lws: Obj | None, leader: Obj) -> None:
        """podTerminationPolicy Parallel (C13): a terminating leader takes its workers with it."""
        cached = self._informers.statefulset(namespace_of(leader), name_of(leader))
        doomed = worker_statefulset_to_delete(lws, leader, cached)
        if doomed is None:
            return
        if await self._client.delete_incarnation(
            STATEFULSETS, namespace_of(doomed), name_of(doomed), uid_of(doomed)
        ):
            log.info("deleted worker statefulset with its leader", pod=name_of(leader), policy="Parallel")

    # ----- Hash identity: the replacement gate and the group-ready condition ---------------------
    async def _admit(self, lws: Obj, leader: Obj) -> bool:
        """Lift the group-replacement gate when C12 allows; True once the leader may schedule."""
        namespace = namespace_of(leader)
        deploy = self._informers.deployment(namespace, name_of(lws))
        desired = revision_key_of(deploy) if deploy is not None else ""
        pods = self._informers.set_pods(namespace, name_of(lws))
        admission = decide_admission(lws, leader, pods, desired)
        event = admission_event(leader, admission)
        if admission.step is AdmissionStep.ADMIT:
            if max_group_restarts(lws) is not None:
                # A replacement keeps its predecessor's budget: claim the unowned count first.
                leaders = [p for p in pods if is_leader_pod(p)]
                await mutate_restart_counts(
                    self._client,
                    namespace,
                    name_of(lws),
                    lambda counts: claim_hash_count(counts, leader, leaders),
                )
            await self._client.merge_patch(PODS, namespace, name_of(leader), remove_gate_patch(leader))
        if event is not None:
            record(self._recorder, lws, event)
        return admission.step is AdmissionStep.ADMIT

    async def _sync_group_ready(self, leader: Obj, workers_ready: bool) -> None:
        patch = group_ready_status_patch(leader, workers_ready, datetime.datetime.now(datetime.UTC))
        if patch is not None:
            await self._client.patch(
                PODS,
                namespace_of(leader),
                name_of(leader),
                patch,
                patch_type=STRATEGIC_PATCH,
                subresource="status",
            )

    def gated_leader_waker(self, controller: Controller) -> FuncHandler[Pod]:
        """Wake the gated leaders of a set (C12) when one of its pods is deleted (a slot or a
        tearing-down group may be freed) or a gated leader is created (the FIFO order changed)."""

        def wake(pod: Pod) -> None:
            meta = pod.metadata
            set_name = (meta.labels or {}).get(c.LABEL_SET_NAME)
            if not set_name:
                return
            for key in self._informers.gated_leader_keys(meta.namespace or "", set_name):
                controller.queue.add(key)

        def added(pod: Pod) -> None:
            gates = pod.spec.schedulingGates or []
            if any(gate.name == c.SCHEDULING_GATE_GROUP_REPLACEMENT for gate in gates):
                wake(pod)

        return FuncHandler(add=added, delete=wake)

    async def _fresh_pod(self, pod: Obj) -> Obj | None:
        return await self._fresh_pod_named(namespace_of(pod), name_of(pod))

    async def _leader_to_build_from(self, leader: Obj) -> Obj | None:
        """The leader a new worker StatefulSet is built from: the cached one when the pod cache has
        seen the worker StatefulSet's absence (`StatefulSetDeletions`), else a fresh read, so no
        group is built for a leader that is already gone. Upstream reads its cache only; the GET
        here happens only when the pod cache lags (issue 14: it was one GET per group)."""
        if self._sts_deletions.seen_by_pods(ObjectKey(namespace_of(leader), name_of(leader))):
            return leader
        return await self._fresh_pod(leader)

    async def _ensure_pod_group(self, lws: Obj, leader: Obj) -> None:
        """The provider's PodGroup for this group, before workers exist (their gang needs it)."""
        if self._provider is None:
            return
        try:
            await self._provider.create_pod_group_if_not_exists(lws, leader)
        except SchedulingError as err:
            if err.unexpected_owner:
                # Upstream's Eventf(pod, lws, ...): regarding the leader, related to the LWS.
                self._recorder.record(
                    object_ref(leader, api_version="v1", kind="Pod"),
                    c.EVENT_TYPE_WARNING,
                    c.EVENT_UNEXPECTED_POD_GROUP_OWNER,
                    c.EVENT_ACTION_CREATE,
                    str(err),
                    lws_ref(lws),
                )
            raise

    async def _ensure_replica_service(self, lws: Obj, leader: Obj) -> None:
        service = replica_service(lws, leader)
        if service is None or self._informers.has_service(namespace_of(leader), name_of(service)):
            return
        try:
            await self._client.create(SERVICES, service)
        except Exception as err:
            if not is_already_exists(err):
                raise

    async def _node_selector(self, lws: Obj, leader: Obj) -> dict[str, str] | None:
        topology_key = exclusive_topology_key(lws)
        if topology_key is None:
            return None
        node_name = str((leader.get("spec") or {}).get("nodeName"))
        try:
            node = await self._client.get(NODES, None, node_name)
        except Exception as err:
            raise RuntimeError(f"getting node {node_name!r}: {err}") from err
        return topology_node_selector(node, topology_key)

    async def _create_worker_statefulset(
        self, lws: Obj, leader: Obj, revision: Mapping[str, Any]
    ) -> Result | None:
        """`leader` is the cached projection (it keeps the containers' TPU requests) or a full pod."""
        extra = dict(scheduling_template_annotations(lws))
        if is_hash(lws):
            extra[c.ANNOTATION_GROUP_IDENTITY] = c.GROUP_IDENTITY_HASH
        body = worker_statefulset(
            lws,
            leader,
            revision_spec(lws, revision),
            node_selector=await self._node_selector(lws, leader),
            extra_template_annotations=extra,
        )
        try:
            created = await self._client.create(STATEFULSETS, body)
        except Exception as err:
            if is_already_exists(err):
                return await self._worker_statefulset_exists(lws, leader)
            record(self._recorder, lws, worker_statefulset_failed_event(leader, error_text(err)))
            raise
        self.created_workers.remember(ObjectKey(namespace_of(leader), name_of(leader)), created)
        record(self._recorder, lws, worker_statefulset_created_event(leader))
        return None

    async def _worker_statefulset_exists(self, lws: Obj, leader: Obj) -> Result | None:
        """The create met a StatefulSet of the worker name. Ours (its create raced the cache) is no
        failure, as upstream; one outside our caches (no set-name label) that we never made is
        reported, where upstream stays silent and the group never gets workers."""
        existing = await self._client.get_or_none(STATEFULSETS, namespace_of(leader), name_of(leader))
        if existing is None or not foreign_worker_statefulset(existing, leader):
            return None
        self._report_foreign_workers(lws, leader, existing)
        return Result(requeue_after=FOREIGN_WORKERS_RECHECK_SECONDS)

    def _report_foreign_workers(self, lws: Obj, leader: Obj, workers: Obj) -> None:
        """Left alone (it is not ours to delete or adopt), but never in silence."""
        event = foreign_worker_statefulset_event(workers, leader)
        log.warning("a statefulset we did not make holds the group's worker name", message=event.message)
        record(self._recorder, lws, event)


# ----- wiring ------------------------------------------------------------------------------------------


def _utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


def _set_pods_only(meta: Any, _obj: object) -> bool:
    return c.LABEL_SET_NAME in (meta.labels or {})


def _owner_leader(meta: Any, obj: object) -> Iterable[ObjectKey]:
    """Worker StatefulSets wake the leader pod that controls them."""
    return owner_mapper("Pod", "")(meta, obj)


def _held_pods(informers: SharedInformers, namespace: str, set_name: str) -> list[ObjectKey]:
    return [
        ObjectKey(namespace, name_of(p))
        for p in informers.set_pods_where(namespace, set_name, holds_budget_finalizer)
    ]


def _held_pods_of_lws(informers: SharedInformers) -> Any:
    """LWS events (its deletion above all) wake the pods the restart budget holds."""

    def mapper(meta: Any, _obj: object) -> Iterable[ObjectKey]:
        return _held_pods(informers, meta.namespace or "", meta.name or "")

    return mapper


def _held_pods_of_leader_statefulset(informers: SharedInformers) -> Any:
    """A leader StatefulSet or Deployment change (scale-down, rollout) may tear down a retained
    group."""

    def mapper(meta: Any, _obj: object) -> Iterable[ObjectKey]:
        if (meta.labels or {}).get(c.LABEL_SET_NAME) != meta.name:
            return ()  # a worker StatefulSet
        return _held_pods(informers, meta.namespace or "", meta.name or "")

    return mapper


def _worker_deletion_waker(controller: Controller) -> FuncHandler[Pod]:
    """A deleted worker pod frees its name: wake the leader that may wait for it."""

    def deleted(pod: Pod) -> None:
        meta = pod.metadata
        labels = meta.labels or {}
        if c.LABEL_SET_NAME not in labels or labels.get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX:
            return
        leader = leader_name_for_worker({"metadata": {"name": meta.name, "annotations": meta.annotations}})
        if leader:
            controller.queue.add(ObjectKey(meta.namespace or "", leader))

    return FuncHandler(delete=deleted)


def setup(
    manager: Manager,
    informers: SharedInformers,
    *,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    provider: SchedulerProvider | None = None,
    failure_ledger: bool = True,
) -> Controller:
    """Create the pod controller, declare its watches and add it to the manager.

    `failure_ledger=False` (manager flag `--disable-failure-ledger`) keeps no history; back-off
    state of an LWS that asks for a back-off is still stored."""
    recorder = manager.event_recorder(c.EVENT_COMPONENT_LWS)
    reconciler = GroupReconciler(
        manager.client,
        informers,
        recorder,
        provider,
        metrics=new_group_metrics(manager.registry),
        ledger=FailureLedger(manager.client, enabled=failure_ledger),
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    informers.pods.add_handler(FuncHandler(delete=reconciler.remember_deleted))
    reconciler.created_workers.forget_on_delete(informers.statefulsets)
    informers.pods.add_handler(reconciler.gated_leader_waker(controller))
    informers.pods.add_handler(_worker_deletion_waker(controller))
    controller.watch(informers.pods, own_key, predicate=_set_pods_only)
    controller.watch(informers.statefulsets, _owner_leader)
    controller.watch(informers.lws, _held_pods_of_lws(informers))
    controller.watch(informers.statefulsets, _held_pods_of_leader_statefulset(informers))
    controller.watch(informers.deployments, _held_pods_of_leader_statefulset(informers))
    manager.add_controller(controller)
    return controller
