"""The pod (group) controller's reconciler, Ordinal identity: restart policies and
worker startup.

One reconcile of a pod key `<namespace>/<pod>`:
  1. replay the deletion snapshots of workers with that name (a StatefulSet may already have
     re-created a same-name pod, so the snapshot is the only trace of the failure; snapshots.py);
  2. for the live pod: apply the restart policy — a failed group is recreated by deleting its
     leader with Foreground propagation, exactly once per failure (recovery.py);
  3. for a leader: ensure the per-replica Service (UniquePerReplica), then — once the startup
     policy and exclusive placement allow — create its worker StatefulSet from the leader's
     revision (startup.py). Worker StatefulSets are create-only: a group changes only by being
     recreated.

Bounded group recovery (maxGroupRestarts, core/lifecycle/restartbudget.py): a recreation first consumes
one unit of the group's budget, decided on fresh reads of the leader and the LWS; a spent budget retains the
group (exhausted leader, cleanup finalizers on every pod) until `recover=true` on the leader, a
scale-down/rollout teardown, or the LWS going away releases it (retention.py).
Hash identity: the group-replacement gate is lifted in FIFO order (C12) and the leader's
group-ready condition mirrors its worker StatefulSet (identity.py).
The scheduler provider (if configured) makes the group's PodGroup before its workers exist.
"""

from __future__ import annotations

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.group.cleanup import WorkerCleanup
from leaderworkerset.controllers.group.identity import HashIdentity
from leaderworkerset.controllers.group.leaders import LeaderDeletions
from leaderworkerset.controllers.group.ledger import FailureLedger
from leaderworkerset.controllers.group.metrics import GroupMetrics, new_group_metrics
from leaderworkerset.controllers.group.observe import GroupObserver
from leaderworkerset.controllers.group.reads import set_of
from leaderworkerset.controllers.group.recovery import Recovery
from leaderworkerset.controllers.group.retention import Retention
from leaderworkerset.controllers.group.snapshots import DeletionSnapshots
from leaderworkerset.controllers.group.startup import Startup
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.quarantine.writes import NodeQuarantine
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core.groups.state import is_exhausted, is_leader_pod
from leaderworkerset.core.lifecycle.restart import GroupRestartError, check_group_pod
from leaderworkerset.core.objects import is_deleting
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock, RealClock
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.objects import ObjectKey

log = structlog.get_logger(__name__)


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
        clock: Clock | None = None,
    ) -> None:
        # Wall time for what the controller stamps (ledger entries, back-off state, conditions).
        clock = clock or RealClock()
        self._informers = informers
        self._recorder = recorder
        # Fed by the pod informer's deletions (setup.py).
        self.snapshots = DeletionSnapshots()
        self._observer = GroupObserver(informers, recorder, clock, metrics or new_group_metrics())
        leaders = LeaderDeletions(client, recorder)
        self._retention = Retention(client, informers, leaders)
        self._recovery = Recovery(
            client,
            informers,
            recorder,
            clock,
            failure_ledger=ledger or FailureLedger(client),
            leaders=leaders,
            retention=self._retention,
            observer=self._observer,
            quarantine=NodeQuarantine(client, recorder, clock),
        )
        self._cleanup = WorkerCleanup(client, informers)
        self.startup = Startup(
            client,
            informers,
            recorder,
            provider,
            identity=HashIdentity(client, informers, recorder, clock),
            cleanup=self._cleanup,
        )

    async def reconcile(self, key: ObjectKey) -> Result | None:
        wait = await self.snapshots.replay(key, self._recovery.restart_policy)
        result = await self._reconcile_pod(key)
        self._observer.explain(key)
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
        lws = set_of(self._informers, pod)
        if is_leader_pod(pod):
            await self._cleanup.with_leader(lws, pod)
        if lws is None or is_deleting(lws):
            # Workload teardown, not a failure: release what the budget holds, recreate nothing.
            await self._retention.release_on_teardown(pod)
            return None
        if is_leader_pod(pod) and is_exhausted(pod):
            await self._retention.exhausted_leader(pod, lws)
            return None
        outcome = await self._recovery.restart_policy(pod, lws)
        if outcome.wait is not None:
            return Result(requeue_after=outcome.wait)
        if outcome.stop:
            return None
        self._observer.time_to_ready(pod, lws)
        if not is_leader_pod(pod):
            return None
        return await self.startup.reconcile(pod, lws)
