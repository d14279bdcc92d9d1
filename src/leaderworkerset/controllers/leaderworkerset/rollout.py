"""The leader StatefulSet of an Ordinal LWS: the rolling update and its opt-in control.

Gather, decide, apply: the round's inputs are read from the caches first (`RolloutInputs`), the
partition and replicas are decided once (`core.rollout.round.decide_rollout_round`, upstream's step
then pause and progress deadline), and the result is server-side applied with its events.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field, replace

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref, record
from leaderworkerset.controllers.leaderworkerset.revisions import Revisions
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.controllers.leaderworkerset.surgefallback import SurgeFallback
from leaderworkerset.controllers.memos import AppliedIntents, WriteMemo
from leaderworkerset.core.desired.statefulsets import leader_statefulset
from leaderworkerset.core.objects import MutableObj, name_of
from leaderworkerset.core.rollout import round as rolloutround
from leaderworkerset.core.rollout.control import rollout_control
from leaderworkerset.core.rollout.partition import LeaderStatefulSetView, RolloutDecision, after_apply_events
from leaderworkerset.core.scheduling.workloads import scheduling_template_annotations
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import STATEFULSETS


@dataclass(eq=False)
class Rollout(Shell):
    _: KW_ONLY
    revisions: Revisions
    # The leader StatefulSet (or Hash Deployment) intents are shared with `hash.py`: both are keyed
    # by the LWS.
    intents: AppliedIntents
    surge: SurgeFallback
    memo: WriteMemo = field(default_factory=WriteMemo)

    def leader_statefulset(self, key: ObjectKey) -> MutableObj | None:
        cached = self.informers.statefulset(key.namespace, key.name)
        return self.memo.freshest(key, cached, self.informers.statefulsets.store.resource_version)

    async def step(self, round_: Round) -> None:
        """Decide the leader StatefulSet's partition and replicas and apply them."""
        inputs = self._gather(round_)
        round_.surge = surge = await self.surge.decide(round_)
        await self.surge.remember(round_, surge)  # before the StatefulSet moves
        inputs = replace(inputs, lws=round_.lws, without_surge=surge.fallback)
        outcome = rolloutround.decide_rollout_round(inputs, self.clock.wall())
        decision = outcome.decision
        round_.decision, round_.stall = decision, outcome.stall
        round_.requeue_after = _earliest(outcome.requeue_after, surge.requeue_after, round_.requeue_after)
        await self._apply(round_, decision)

    def _gather(self, round_: Round) -> rolloutround.RolloutInputs:
        lws, key = round_.lws, round_.key
        round_.control = control = rollout_control(lws)
        round_.under_way = rolloutround.rollout_under_way(lws, self.revisions.of(key), round_.revision_key)
        leader_pods: list[MutableObj] = []
        statefulsets: list[MutableObj] = []
        if round_.leader_sts is not None:
            # Only needed mid-rollout, but cheap enough to gather every time from the indexes.
            leader_pods = round_.leader_pods(self.informers)
            statefulsets = round_.statefulsets(self.informers)
        pods: list[MutableObj] = []
        if rolloutround.reads_pods(
            control,
            leader_sts=round_.leader_sts,
            revision_created=round_.revision_created,
            under_way=round_.under_way,
        ):
            pods = self.informers.set_pods(key.namespace, key.name)  # the stall's diagnosis reads workers
        return rolloutround.RolloutInputs(
            lws=lws,
            leader_sts=round_.leader_sts,
            revision=round_.revision,
            revision_key=round_.revision_key,
            revision_created=round_.revision_created,
            control=control,
            under_way=round_.under_way,
            leader_pods=leader_pods,
            statefulsets=statefulsets,
            pods=pods,
            in_place_hold=round_.in_place_hold,
            in_place_keep=round_.in_place_keep,
        )

    async def _apply(self, round_: Round, decision: RolloutDecision) -> None:
        for event in decision.events:
            record(self.recorder, round_.lws, event)
        body = leader_statefulset(
            round_.lws,
            partition=decision.partition,
            replicas=decision.replicas,
            revision_key=round_.revision_key,
            extra_template_annotations=scheduling_template_annotations(round_.lws),
        )
        if self.intents.unchanged(round_.key, body, round_.leader_sts):
            return  # nothing to change, and no partition moved: no event either
        try:
            applied = await self.client.apply(STATEFULSETS, body)
        except Exception as err:
            record_apply_failure(self.recorder, round_, err)
            raise
        self.memo.remember(round_.key, applied)
        self.intents.remember(round_.key, body, applied)
        round_.applied_sts = applied
        previous = None if round_.leader_sts is None else LeaderStatefulSetView.of(round_.leader_sts)
        for event in after_apply_events(
            lws_name=round_.key.name,
            previous=previous,
            partition=decision.partition,
            revision_created=round_.revision_created,
            revision_name=None if round_.revision is None else name_of(round_.revision),
        ):
            record(self.recorder, round_.lws, event)


def _earliest(*delays: float | None) -> float | None:
    known = [delay for delay in delays if delay is not None]
    return min(known) if known else None


def record_apply_failure(
    recorder: EventRecorder,
    round_: Round,
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
    recorder.warning(lws_ref(round_.lws), reason, action, note)
