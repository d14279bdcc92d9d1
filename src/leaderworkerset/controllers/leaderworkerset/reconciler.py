"""One reconcile of `<namespace>/<lws>`: the steps in order, each handed to its collaborator."""

from __future__ import annotations

from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.leaderworkerset.children import Children
from leaderworkerset.controllers.leaderworkerset.conditionmetrics import ConditionMetrics
from leaderworkerset.controllers.leaderworkerset.hash import LeaderDeployments
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.leaderworkerset.inplaceupdate import InPlaceUpdates
from leaderworkerset.controllers.leaderworkerset.replacement import LeaderReplacement
from leaderworkerset.controllers.leaderworkerset.restarts import RestartCounts
from leaderworkerset.controllers.leaderworkerset.revisions import Revisions
from leaderworkerset.controllers.leaderworkerset.rollout import Rollout
from leaderworkerset.controllers.leaderworkerset.rolloutmetrics import RolloutMetrics, RolloutObserver
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.status import StatusWriter, spec_problem
from leaderworkerset.controllers.leaderworkerset.surgefallback import SurgeFallback
from leaderworkerset.controllers.memos import AppliedIntents
from leaderworkerset.controllers.quarantine.metrics import QuarantineMetrics
from leaderworkerset.controllers.quarantine.writes import NodeQuarantine
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.controllers.scheduling.prerequisites import reconcile_prerequisites
from leaderworkerset.core.desired import statuswrite
from leaderworkerset.core.objects import is_deleting, is_hash, lws_replicas
from leaderworkerset.core.rollout.partition import TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey


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
        condition_metrics: ConditionMetrics | None = None,
        quarantine_metrics: QuarantineMetrics | None = None,
        restart_support: InPlaceRestartSupport | None = None,
    ) -> None:
        self._informers = informers
        self._recorder = recorder
        self._clock = clock
        self._provider = provider
        self._observer = RolloutObserver(rollout_metrics, clock)
        self._conditions = condition_metrics
        intents = AppliedIntents()
        shell = (client, informers, recorder, clock)
        self.revisions = Revisions(*shell)
        self.status = StatusWriter(*shell, restart_support=restart_support)
        surge = SurgeFallback(*shell, memo=self.status.memo)
        self.rollout = Rollout(*shell, revisions=self.revisions, intents=intents, surge=surge)
        self.replacement = LeaderReplacement(*shell)
        self.in_place = InPlaceUpdates(*shell, revisions=self.revisions)
        self.deployments = LeaderDeployments(*shell, intents=intents)
        self._children = Children(*shell)
        self._restarts = RestartCounts(*shell)
        self._intents = intents
        self.quarantine = NodeQuarantine(
            client, recorder, clock, quarantine_metrics, sets=informers.lws.store.list
        )

    def forget_on_delete(self, informers: SharedInformers) -> None:
        """What the collaborators remember of an object ends when the watch sees it deleted."""
        self.rollout.memo.forget_on_delete(informers.statefulsets)
        self.deployments.memo.forget_on_delete(informers.deployments)
        self._intents.forget_on_delete(informers.statefulsets)
        self._intents.forget_on_delete(informers.deployments)
        self.status.memo.forget_on_delete(informers.lws)
        self.revisions.patches.forget_on_delete(informers.lws)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        lws = self._informers.lws.store.get(key)
        if lws is not None:
            lws = self.status.memo.freshest(key, lws)
        if lws is not None and is_deleting(lws):
            await self._children.delete_workers_in_parallel(lws)
        if lws is None or is_deleting(lws):
            self._observer.forget(key)
            if self._conditions is not None:
                self._conditions.forget(key)
            self.replacement.forget(key)
            self.in_place.forget(key)
            self.quarantine.forget(key)
            return None  # children go away through garbage collection
        round_ = Round.of(lws, key)
        if self.status.flag_annotations(round_):
            await self.status.persist(round_)
            return Result(requeue=True)  # the status moved on: the next round reads it
        # Node quarantine (opt-in): cool-downs that ended are released before anything else.
        release_in = await self.quarantine.release(lws, key)
        try:
            if is_hash(lws):
                result = await self._reconcile_hash(round_)
            else:
                result = await self._reconcile_ordinal(round_)
        except Exception as err:
            problem = spec_problem(err)
            if problem is not None:
                self.status.report_invalid_spec(round_, problem)
            await self.status.persist_failed(round_)
            raise  # retried with backoff; a fixed spec comes back through the watch
        return _with_release(result, release_in)

    async def _reconcile_ordinal(self, round_: Round) -> Result | None:
        round_.leader_sts = self.rollout.leader_statefulset(round_.key)
        if round_.leader_sts is not None and is_deleting(round_.leader_sts):
            return Result(requeue_after=TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS)
        if not await self.revisions.ensure(round_):
            return None  # going away: its deletion brings the next event
        await self._scheduling_prerequisites(round_)
        in_place = await self.in_place.prepare(round_)
        round_.in_place_hold = in_place is not None and in_place.plan.hold
        round_.in_place_keep = in_place is not None and in_place.plan.keep
        await self.rollout.step(round_)
        if in_place is not None:
            # The leader StatefulSet has the new template (our write, if the watch lags).
            await self.in_place.advance(round_, in_place, self.rollout.leader_statefulset(round_.key))
        # Where the StatefulSets ignore maxUnavailable: the outdated leaders, from the freshest state.
        await self.replacement.step(round_, self.rollout.leader_statefulset(round_.key))
        await self._children.ensure_shared_service(round_)
        status, update_done = self.status.ordinal(round_)
        if not await self.status.persist(round_):
            return Result(requeue=True)  # a newer LWS is on its way through the watch
        self._observer.observe(round_, status, update_done)
        self._observe_conditions(round_)
        if update_done:
            await self.revisions.truncate_history(round_)
            await self._restarts.prune_settled(round_)
        if round_.requeue_after is not None:
            return Result(requeue_after=round_.requeue_after)  # when the progress deadline falls
        return None

    async def _reconcile_hash(self, round_: Round) -> Result | None:
        """Hash identity: the same steps around the leader Deployment."""
        deploy = self.deployments.leader(round_.key)
        if deploy is not None and is_deleting(deploy):
            return Result(requeue_after=TERMINATING_LEADER_STATEFULSET_REQUEUE_SECONDS)
        # The Deployment carries the revision label exactly where the leader StatefulSet does.
        round_.leader_sts = deploy
        if not await self.revisions.ensure(round_):
            return None  # going away: its deletion brings the next event
        leaders = self._informers.set_leader_pods(round_.key.namespace, round_.key.name)
        await self._restarts.prune_hash(round_, leaders)
        # Hash: the Workload (and the whole-set PodGroup) before any leader exists; per-group
        # PodGroups come from the pod controller once admission has drawn the group key.
        await self._scheduling_prerequisites(round_)
        applied = await self.deployments.apply(round_, deploy)
        await self._children.ensure_shared_service(round_)
        update_done = self.status.hash(round_, applied, leaders)
        if not await self.status.persist(round_):
            return Result(requeue=True)
        self._observe_conditions(round_)
        if update_done:
            await self.revisions.truncate_history(round_)
            await self._restarts.prune_settled(round_)
        return None

    def _observe_conditions(self, round_: Round) -> None:
        """The conditions the round left (written, or stored when nothing changed)."""
        if self._conditions is not None:
            self._conditions.observe(round_.key, statuswrite.status_of(round_.lws))

    async def _scheduling_prerequisites(self, round_: Round) -> None:
        """Scheduling prerequisites before the leader workload; their condition joins the
        round's status, and a failure is raised (after that status is written) to retry."""
        outcome = await reconcile_prerequisites(
            self._provider,
            self._recorder,
            round_.lws,
            replicas=lws_replicas(round_.lws),
            revision=round_.revision_key,
            clock=self._clock,
        )
        if outcome.conditions is not None:
            round_.set_status({**statuswrite.status_of(round_.lws), "conditions": outcome.conditions})
        if outcome.failure is not None:
            raise outcome.failure


def _with_release(result: Result | None, release_in: float | None) -> Result | None:
    """The round's result, requeued no later than the next quarantine release."""
    if release_in is None or (result is not None and result.requeue):
        return result
    if result is not None and result.requeue_after is not None:
        return Result(requeue_after=min(result.requeue_after, release_in))
    return Result(requeue_after=release_in)
