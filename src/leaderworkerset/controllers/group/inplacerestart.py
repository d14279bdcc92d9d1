"""In-place group restart (core/lifecycle/inplacerestart.py): the writes behind one decision.

For a set with `leaderworkerset.dev/restart-strategy: InPlace`, a restart of a live pod of a group is
either one the controller ordered (accounted, nothing else) or a failure: the group's state on the
leader is claimed with a conditional write, the restart budget charged, the ledger written, and
every pod of the group told the new epoch (its agent restarts it in place). Whatever cannot be done
in place — a pod the webhook did not equip, a group that keeps failing, a spent budget — goes back
to the recreation path (`None`), as without the annotation. Independent of the agent: the controller
only writes annotations.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.restartbudget import mutate_restart_counts, patch_pod
from leaderworkerset.core.lifecycle import inplacerestart, ledger, restartbudget
from leaderworkerset.core.lifecycle.restart import RestartDecision
from leaderworkerset.core.objects import (
    ControllerEvent,
    MutableObj,
    is_deleting,
    lws_size,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS

Classify = Callable[[MutableObj], Awaitable[ledger.Trigger]]
Record = Callable[[MutableObj, ledger.LedgerEntry], Awaitable[None]]


class InPlaceRestarts:
    def __init__(
        self, client: KubeClient, recorder: EventRecorder, clock: Clock, *, classify: Classify, record: Record
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._clock = clock
        self._classify = classify
        self._record = record

    async def handle(
        self, lws: MutableObj, pod: MutableObj, decision: RestartDecision, group_pods: Sequence[MutableObj]
    ) -> bool | None:
        """Whether the pod's reconcile stops here (False: carry on as for a healthy pod); None:
        recreate the group instead."""
        kind = inplacerestart.classify_pod_restart(pod)
        if kind is not inplacerestart.PodRestart.FAILURE:
            if kind is inplacerestart.PodRestart.ORDERED:
                await patch_pod(self._client, pod, _account)
            await self._settle(lws, decision, group_pods)
            return False
        missing = inplacerestart.unequipped(group_pods)
        if missing:
            self._fallback(lws, pod, f"pods {', '.join(missing)} have no restart agent (admitted without it)")
            return None
        return await self._restart_group(lws, pod, decision, group_pods)

    async def _restart_group(
        self, lws: MutableObj, pod: MutableObj, decision: RestartDecision, group_pods: Sequence[MutableObj]
    ) -> bool | None:
        namespace = namespace_of(pod)
        leader = await self._client.get_or_none(PODS, namespace, decision.leader_name)
        fresh_pod = await self._client.get_or_none(PODS, namespace, name_of(pod))
        fresh_lws = await self._client.get_or_none(LEADERWORKERSETS, namespace, name_of(lws))
        if leader is None or uid_of(leader) != decision.leader_uid or fresh_pod is None:
            return True  # the group is going or gone: nothing to restart
        if (
            uid_of(fresh_pod) != uid_of(pod)
            or inplacerestart.classify_pod_restart(fresh_pod) is not inplacerestart.PodRestart.FAILURE
        ):
            return False  # answered already (the cache lags)
        if fresh_lws is None or is_deleting(fresh_lws) or is_deleting(leader):
            return None  # teardown and retention are the recreation path's
        state = inplacerestart.in_place_restart_state(leader)
        failure = inplacerestart.failure_id(fresh_pod)
        key = restartbudget.restart_count_key(leader)
        limit = restartbudget.max_group_restarts(fresh_lws)
        spent = restartbudget.restart_counts(fresh_lws).get(key, 0) if limit is not None else None
        now = self._clock.wall()
        choice = inplacerestart.decide_in_place_restart(
            state, failure, name_of(fresh_pod), now=now.timestamp(),
            budget_count=None if spent is None else spent + 1, group_size=lws_size(fresh_lws),
        )  # fmt: skip
        if choice.step is inplacerestart.InPlaceRestartStep.RECREATE:
            self._fallback(lws, fresh_pod, choice.reason)
            return None
        if (
            choice.step is inplacerestart.InPlaceRestartStep.RESTART
            and limit is not None
            and spent is not None
            and spent >= limit
        ):
            return None  # the recreation path retains the group, as for any spent budget
        if choice.step is not inplacerestart.InPlaceRestartStep.FINISH and choice.state != state:
            # The claim: conditional on the fresh read (a conflict fails the reconcile, which retries).
            await self._client.merge_patch(
                PODS, namespace, name_of(leader), inplacerestart.state_patch(leader, choice.state)
            )
        if choice.step is inplacerestart.InPlaceRestartStep.ABSORB:
            await patch_pod(self._client, fresh_pod, _account)
            return True
        new = choice.state
        if new.count is not None:
            await mutate_restart_counts(
                self._client,
                namespace,
                name_of(lws),
                lambda counts: restartbudget.raise_count(counts, key, int(new.count or 0)),
            )
        trigger = await self._classify(fresh_pod)
        when = datetime.datetime.fromtimestamp(new.last or now.timestamp(), datetime.UTC)
        entry = ledger.entry_for(
            trigger, group=ledger.group_of(leader), action=ledger.Action.RESTARTED_IN_PLACE, when=when,
            leader_uid=uid_of(leader),
        )  # fmt: skip
        await self._record(fresh_lws, entry)
        members = [p for p in group_pods if not is_deleting(p) and uid_of(p) != uid_of(fresh_pod)]
        for member in [fresh_pod, *members]:
            await patch_pod(
                self._client, member, lambda cur: inplacerestart.order_patch(cur, new.epoch, new.origin)
            )
        if choice.step is inplacerestart.InPlaceRestartStep.RESTART:
            record(self._recorder, lws, _restarted_event(fresh_pod, leader, new))
        return True

    async def _settle(
        self, lws: MutableObj, decision: RestartDecision, group_pods: Sequence[MutableObj]
    ) -> None:
        """Mark the group's restart over once every pod is Ready again (read from the cache, written
        on a fresh read of the leader): from then on a restart is a new failure again."""
        size = lws_size(lws)
        cached = next((p for p in group_pods if name_of(p) == decision.leader_name), None)
        if cached is None or not inplacerestart.settles(
            inplacerestart.in_place_restart_state(cached), group_pods, size
        ):
            return
        leader = await self._client.get_or_none(PODS, namespace_of(cached), decision.leader_name)
        if leader is None or uid_of(leader) != decision.leader_uid:
            return
        state = inplacerestart.in_place_restart_state(leader)
        if inplacerestart.settles(state, group_pods, size):
            await self._client.merge_patch(
                PODS, namespace_of(leader), name_of(leader), inplacerestart.settled_patch(leader, state)
            )

    def _fallback(self, lws: MutableObj, pod: MutableObj, why: str) -> None:
        message = f"Pod {name_of(pod)} failed; the group is recreated instead of restarted in place: {why}"
        event = ControllerEvent(
            c.EVENT_TYPE_WARNING, ext.EVENT_IN_PLACE_RESTART_FALLBACK, c.EVENT_ACTION_DELETE, message
        )
        record(self._recorder, lws, event)


def _account(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Recomputed on a fresh read after a conflict: only while a restart is unaccounted."""
    return (
        None
        if inplacerestart.classify_pod_restart(pod) is inplacerestart.PodRestart.NONE
        else inplacerestart.seen_patch(pod)
    )


def _restarted_event(
    pod: MutableObj, leader: MutableObj, state: inplacerestart.InPlaceRestartState
) -> ControllerEvent:
    group = leader.get("metadata", {}).get("labels", {}).get(c.LABEL_GROUP_INDEX, "")
    message = (
        f"Pod {name_of(pod)} restarted: restarting every container of group {group} in place "
        f"(epoch {state.epoch}, {state.streak} in a row)"
    )
    return ControllerEvent(
        c.EVENT_TYPE_NORMAL, ext.EVENT_GROUP_RESTARTED_IN_PLACE, c.EVENT_ACTION_RECONCILE, message
    )
