"""Wiring of the LeaderWorkerSet controller: its reconciler and watches."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.leaderworkerset.conditionmetrics import ConditionMetrics
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.leaderworkerset.inplaceupdate import InPlaceUpdates
from leaderworkerset.controllers.leaderworkerset.reconciler import LeaderWorkerSetReconciler
from leaderworkerset.controllers.leaderworkerset.rolloutmetrics import new_rollout_metrics
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.controllers.quarantine.metrics import new_quarantine_metrics
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.controllers.wakeups import (
    set_pod_update_matters,
    set_statefulset_update_matters,
)
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.objects import name_of, namespace_of
from leaderworkerset.runtime.controller import (
    Controller,
    Mapper,
    label_mapper,
    own_key,
    owner_mapper,
)
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import MetaLike, ObjectKey
from leaderworkerset.runtime.projections import Deployment, Pod, StatefulSet
from leaderworkerset.runtime.reflector import FuncHandler

CONTROLLER_NAME = "leaderworkerset"
DEFAULT_MAX_CONCURRENT = 4
# Events of the objects a set owns (its StatefulSets, leader pods, Services, Deployments) within
# this window wake it once: one round then sees them all. A 100-group create brought 176 rounds
# where upstream's controller makes 67 (docs/benchmarks.md); the set's own events stay immediate.
OWNED_EVENT_BATCH_SECONDS = 0.1


def _pod_to_lws(in_place: InPlaceUpdates) -> Mapper[object]:
    """Leader pods wake their LWS: readiness feeds status even where no StatefulSet controller
    mirrors it into the leader StatefulSet's status (upstream relies on that echo). Worker pods
    wake it only while an in-place update of the set waits on them (no poll stands in for them)."""
    to_set = label_mapper(c.LABEL_SET_NAME)

    def mapper(meta: MetaLike, obj: object) -> Iterable[ObjectKey]:
        keys = to_set(meta, obj)
        if (meta.labels or {}).get(c.LABEL_WORKER_INDEX) == c.LEADER_WORKER_INDEX:
            return keys
        return [key for key in keys if in_place.under_way(key)]

    return mapper


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


def _requeue_in_place_restart_sets(controller: Controller, informers: SharedInformers) -> None:
    """Every cached set that asks for in-place restarts looks at its prerequisites again."""
    for lws in informers.lws.store.list():
        if inplacerestart.wants_in_place_restart(lws):
            controller.queue.add(ObjectKey(namespace_of(lws), name_of(lws)))


def setup(
    manager: Manager,
    informers: SharedInformers,
    *,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    provider: SchedulerProvider | None = None,
    restart_support: InPlaceRestartSupport | None = None,
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
        condition_metrics=ConditionMetrics(manager.metrics.registry),
        quarantine_metrics=new_quarantine_metrics(manager.metrics.registry),
        restart_support=restart_support,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    controller.watch(informers.lws, own_key)
    # Owned and labelled StatefulSets: the leader StatefulSet and every worker StatefulSet.
    batch = OWNED_EVENT_BATCH_SECONDS
    # A StatefulSet's counts do not move the set's status or rollout (controllers/wakeups.py), nor
    # does the echo of our own leader StatefulSet create.
    controller.watch(
        informers.statefulsets,
        label_mapper(c.LABEL_SET_NAME),
        batch=batch,
        update_matters=set_statefulset_update_matters,
        add_matters=_not_own_create(reconciler.rollout.memo),
    )
    # A round reads only whether the shared Service exists (and creates it when it does not): its
    # deletion matters, its creation and updates never do.
    controller.watch(
        informers.services,
        owner_mapper(c.LWS_KIND, c.LWS_GROUP),
        batch=batch,
        update_matters=lambda _old, _new: False,
        add_matters=lambda _obj: False,
    )
    controller.watch(
        informers.deployments,
        owner_mapper(c.LWS_KIND, c.LWS_GROUP),
        batch=batch,
        add_matters=_not_own_create(reconciler.deployments.memo),
    )
    controller.watch(
        informers.pods, _pod_to_lws(reconciler.in_place), batch=batch, update_matters=set_pod_update_matters
    )
    informers.pods.add_handler(_scheduled_pod_deletions(controller))
    reconciler.forget_on_delete(informers)
    if restart_support is not None:
        restart_support.on_change(lambda: _requeue_in_place_restart_sets(controller, informers))
    manager.add_controller(controller)
    return controller


def _not_own_create(memo: WriteMemo) -> Callable[[StatefulSet | Deployment], bool]:
    """Drop the watch's add of the leader StatefulSet (or Deployment) this controller created: the
    round that created it went on from the written object (`Round.applied_sts`, the collaborators'
    memo), and a fresh workload's plan is already where the next round would leave it; what
    follows, the workload's status and its pods, wakes the set (one round per set
    created, 20 of 133 in a mid-size `many`). The echo of a later apply still wakes it: a rollout
    moves the partition over several rounds, each planned from the workload the last one applied,
    and that echo (upstream's Owns() event) is what starts the next."""

    def matters(obj: StatefulSet | Deployment) -> bool:
        meta = obj.metadata
        return not memo.is_own_write(ObjectKey(meta.namespace or "", meta.name or ""), meta.resourceVersion)

    return matters
