"""Group recovery: the restart policy decides whether a pod's failure recreates its
group; a recreation charges the restart budget (maxGroupRestarts, core/lifecycle/restartbudget.py),
waits out the group's back-off (core/lifecycle/backoff.py), is written to the failure ledger
(core/lifecycle/ledger.py), quarantines the nodes the ledger now implicates (opt-in,
core/quarantine/) and then deletes the leader with Foreground propagation, exactly once per failure.

Budget and back-off are decided on fresh reads of the leader and the LWS: a lagging cache must
never let a group restart past its limit.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, record
from leaderworkerset.controllers.group.inplacerestart import InPlaceRestarts
from leaderworkerset.controllers.group.leaders import LeaderDeletions
from leaderworkerset.controllers.group.ledger import FailureLedger, LedgerNotOwnedError
from leaderworkerset.controllers.group.observe import GroupObserver
from leaderworkerset.controllers.group.reads import lws_of
from leaderworkerset.controllers.group.retention import Retention
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.quarantine.writes import NodeQuarantine
from leaderworkerset.controllers.restartbudget import mutate_restart_counts
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.lifecycle import (
    backoff,
    backoffsource,
    inplacerestart,
    ledger,
    recreation,
    restartbudget,
)
from leaderworkerset.core.lifecycle.recreation import RecreationStep
from leaderworkerset.core.lifecycle.restart import (
    RestartAction,
    RestartDecision,
    decide_restart,
    restart_lookup,
)
from leaderworkerset.core.objects import MutableObj, is_deleting, name_of, namespace_of, uid_of
from leaderworkerset.core.quarantine.policy import quarantine_opted_in
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import CORE_EVENTS, LEADERWORKERSETS, NODES, PODS

log = structlog.get_logger(__name__)

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
    state: backoff.GroupBackoff | None = None  # the back-off state to store with the recreation
    delay: float | None = None  # the delay the recreation waited out


class Recovery:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        clock: Clock,
        *,
        failure_ledger: FailureLedger,
        leaders: LeaderDeletions,
        retention: Retention,
        observer: GroupObserver,
        quarantine: NodeQuarantine,
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._clock = clock
        self._failure_ledger = failure_ledger
        self._leaders = leaders
        self._retention = retention
        self._observer = observer
        self._quarantine = quarantine
        # Leader incarnations whose recreation is under way in this process (see _recreate_group).
        self._recreating: set[str] = set()
        self._in_place_restarts = InPlaceRestarts(
            client,
            recorder,
            clock,
            classify=self._classify,
            record=lambda lws, entry: self._record(lws, entry),
        )

    async def restart_policy(self, pod: MutableObj, lws: MutableObj | None = None) -> RestartOutcome:
        """Apply the group restart policy: whether the pod's reconcile ends here, or waits."""
        lws = lws or lws_of(self._informers, pod)
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
        group_pods = self._informers.group_pods(
            namespace, lookup.group_selector[c.LABEL_SET_NAME], lookup.group_selector[c.LABEL_GROUP_INDEX]
        )
        decision = decide_restart(
            lws,
            pod,
            group_pods=group_pods,
            leader=self._informers.pod(namespace, lookup.leader_name),
            owner_statefulset=owner_sts,
        )
        if (
            decision.action is RestartAction.DELETE_LEADER
            and inplacerestart.wants_in_place_restart(lws)
            and not is_deleting(pod)
        ):
            # A live pod's restart: in place when it can be (a deletion always recreates the group).
            stop = await self._in_place_restarts.handle(lws, pod, decision, list(group_pods))
            if stop is not None:
                return RestartOutcome(stop=stop)
        wait = None
        if decision.action is RestartAction.DELETE_LEADER:
            wait = await self._recreate_group(lws, pod, namespace, decision)
        return RestartOutcome(stop=decision.stop, wait=wait)

    async def _recreate_group(
        self, lws: MutableObj, pod: MutableObj, namespace: str, decision: RestartDecision
    ) -> float | None:
        """Delete the leader to recreate the group, as `recreation.decide_recreation` decides on
        fresh reads of the leader and the LWS (a lagging cache must never let a group restart past
        its limit), once the group's back-off (if the LWS asks for one) allows. Returns the wait
        while backing off."""
        if decision.leader_uid in self._leaders or decision.leader_uid in self._recreating:
            return None  # already deleted by us (the cache has not caught up yet), or being recreated
        # Claimed before the first await: the other pods of a group whose processes all failed
        # together (a multi-host runtime) are reconciled side by side, and must not record, charge
        # and announce the same recreation again.
        self._recreating.add(decision.leader_uid)
        try:
            return await self._recreate_claimed(lws, pod, namespace, decision)
        finally:
            self._recreating.discard(decision.leader_uid)

    async def _recreate_claimed(
        self, lws: MutableObj, pod: MutableObj, namespace: str, decision: RestartDecision
    ) -> float | None:
        leader = await self._client.get_or_none(PODS, namespace, decision.leader_name)
        fresh_lws = None
        if recreation.same_leader(leader, decision.leader_uid):
            fresh_lws = await self._client.get_or_none(LEADERWORKERSETS, namespace, name_of(lws))
        step = recreation.decide_recreation(decision.leader_uid, leader, fresh_lws)
        if leader is None or step.step is RecreationStep.NOTHING:
            return None
        if fresh_lws is None or step.step is RecreationStep.RELEASE:
            await self._retention.release(leader if is_leader_pod(pod) else pod)
            return None
        if step.step is RecreationStep.TERMINATE:
            await self._retention.terminate(fresh_lws, leader)
            return None
        trigger = await self._classify(pod)
        if step.step is RecreationStep.EXHAUST:
            exhausted = ledger.Action.BUDGET_EXHAUSTED
            await self._record(
                fresh_lws, recreation.group_entry(trigger, leader, exhausted, self._clock.wall())
            )
            await self._quarantine_nodes(fresh_lws)
            await self._retention.terminate(fresh_lws, leader)
            return None
        return await self._recreate(lws, fresh_lws, leader, trigger, decision, step.charge, namespace)

    async def _recreate(
        self,
        lws: MutableObj,
        fresh_lws: MutableObj,
        leader: MutableObj,
        trigger: ledger.Trigger,
        decision: RestartDecision,
        charge: restartbudget.RestartBudgetDecision | None,
        namespace: str,
    ) -> float | None:
        """Back off, charge the budget, record, quarantine, then delete the leader."""
        # One instant for the back-off state and the ledger entry, so the ledger's gaps between
        # recreations are the delays the back-off measured (the budget writes below take time).
        decided = self._clock.wall()
        gate = await self._backoff_gate(fresh_lws, leader, trigger, now=decided.timestamp())
        if gate.wait is not None:
            return gate.wait
        if charge is not None:
            if not charge.claimed:
                # Conditional on the fresh read: a concurrent change conflicts and is retried.
                leader = await self._client.merge_patch(
                    PODS, namespace, name_of(leader), restartbudget.claim_patch(leader, charge.count)
                )
            await mutate_restart_counts(
                self._client,
                namespace,
                name_of(lws),
                lambda counts: restartbudget.raise_count(counts, charge.key, charge.count),
            )
        entry = recreation.group_entry(trigger, leader, ledger.Action.RECREATED, decided, gate.delay)
        # Written before the delete: the back-off state must name this incarnation before it goes.
        await self._record(fresh_lws, entry, backoff_state=gate.state)
        # Before the delete: the new group's pods are admitted with the quarantine already in force.
        await self._quarantine_nodes(fresh_lws)
        if await self._leaders.delete(
            lws, namespace, decision.leader_name, decision.leader_uid, decision.event
        ):
            self._observer.recreated(namespace, name_of(lws), str(trigger.cause))
        return None

    async def _classify(self, pod: MutableObj) -> ledger.Trigger:
        """The trigger's cause; the node and the probe events are read only when they can change
        it (a bare deletion; an exit code a probe kill leaves), once per recreation. A failed read
        leaves the cause less specific, never blocks the recreation."""
        node: MutableObj | None = None
        probes: set[str] = set()
        try:
            if ledger.needs_node(pod):
                node = await self._client.get_or_none(
                    NODES, None, str((pod.get("spec") or {}).get("nodeName"))
                )
            if ledger.needs_probe_events(pod) is not None:
                selector = f"involvedObject.uid={uid_of(pod)},reason=Unhealthy"
                events = await self._client.list(CORE_EVENTS, namespace_of(pod), field_selector=selector)
                probes = ledger.probe_failed_containers(events)
        except Exception as err:
            log.warning("failure cause read incomplete", pod=name_of(pod), error=error_text(err))
        return ledger.classify_trigger(pod, node=node, probe_failures=probes)

    async def _quarantine_nodes(self, lws: MutableObj) -> None:
        """Quarantine the nodes the set's ledger (this failure included) now implicates, when the
        set asks for it (core/quarantine/); never fails the recreation."""
        if not quarantine_opted_in(lws):
            return
        try:
            entries = (await self._failure_ledger.read(lws)).entries
        except Exception as err:
            log.warning("failure ledger not read for quarantine", lws=name_of(lws), error=error_text(err))
            return
        await self._quarantine.after_failure(lws, entries)

    async def _record(
        self, lws: MutableObj, entry: ledger.LedgerEntry, *, backoff_state: backoff.GroupBackoff | None = None
    ) -> None:
        """Write the ledger. Without back-off state a failed write is logged and the recreation goes
        on (the ledger is a record, not a gate); back-off state must be stored, so its failure is
        the reconcile's error and is retried."""
        try:
            await self._failure_ledger.record(
                lws, entry=entry, group=entry.group, backoff=backoff_state, keep=quarantine_opted_in(lws)
            )
        except LedgerNotOwnedError as err:
            log.warning("failure ledger skipped", lws=name_of(lws), error=str(err))
        except Exception as err:
            if backoff_state is not None:
                raise
            log.warning("failure ledger not written", lws=name_of(lws), error=error_text(err))

    async def _backoff_gate(
        self, lws: MutableObj, leader: MutableObj, trigger: ledger.Trigger, *, now: float
    ) -> _Gate:
        """Whether the LWS's restart back-off (its typed field, else our annotation) lets this
        recreation happen `now`."""
        effective = backoffsource.effective_backoff(lws)
        invalid = backoffsource.unusable_event(effective)
        if invalid is not None:
            # Admitted with the webhooks off: recreate as upstream does, and say why not backing off.
            record(self._recorder, lws, invalid)
            return _Gate()
        policy = effective.policy
        if policy is None:
            return _Gate()
        group = ledger.group_of(leader)
        state = (await self._failure_ledger.read(lws)).backoff.get(group)
        decision = backoff.decide_backoff(policy, state, now=now, leader_uid=uid_of(leader))
        if decision.recreate:
            # A recreation that waited for nothing records no delay (the first of a streak).
            state = backoff.recreated_state(
                decision, now=now, leader_uid=uid_of(leader), source=effective.source or ""
            )
            return _Gate(state=state, delay=decision.delay or None)
        assert state is not None  # decide_backoff only waits after a previous recreation
        if state.waiting_until != decision.not_before:
            # The first look at this failure: record the wait once, not on every retry.
            when = datetime.datetime.fromtimestamp(now, datetime.UTC)
            entry = ledger.entry_for(
                trigger, group=group, action=ledger.Action.BACKING_OFF, when=when,
                leader_uid=uid_of(leader), delay_seconds=decision.delay,
            )  # fmt: skip
            await self._record(lws, entry, backoff_state=backoff.waiting_state(state, decision))
            record(self._recorder, lws, backoff.backoff_event(leader, decision, now=now))
        return _Gate(wait=decision.remaining(now) + _BACKOFF_REQUEUE_MARGIN_SECONDS)
