"""Wiring of the pod controller: its reconciler, the handlers fed by the pod cache, and its watches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.group.ledger import FailureLedger
from leaderworkerset.controllers.group.metrics import new_group_metrics
from leaderworkerset.controllers.group.reconciler import GroupReconciler
from leaderworkerset.controllers.informers import SharedInformers, behind_replacement_gate
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.controllers.wakeups import (
    idle_worker,
    pod_update_matters,
    worker_statefulset_update_matters,
)
from leaderworkerset.core.groups.naming import leader_name_for_worker
from leaderworkerset.core.lifecycle.restart import exclusive_topology_key
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.core.observe.notready import wants_not_ready_events
from leaderworkerset.runtime.controller import Controller, own_key, owner_mapper
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import ObjectKey, controller_of
from leaderworkerset.runtime.projections import Pod, StatefulSet
from leaderworkerset.runtime.reflector import FuncHandler

CONTROLLER_NAME = "pod"
DEFAULT_MAX_CONCURRENT = 4


def _set_pods_only(meta: Any, _obj: object) -> bool:
    return c.LABEL_SET_NAME in (meta.labels or {})


def _owner_leader(meta: Any, obj: object) -> Iterable[ObjectKey]:
    """Worker StatefulSets wake the leader pod that controls them."""
    return owner_mapper("Pod", "")(meta, obj)


def _cached_set(informers: SharedInformers, meta: Any) -> MutableObj | None:
    set_name = (meta.labels or {}).get(c.LABEL_SET_NAME)
    return informers.lws.store.get(ObjectKey(meta.namespace or "", set_name)) if set_name else None


def _diagnosed(informers: SharedInformers, meta: Any) -> bool:
    """The object's set asks for GroupNotReady events, whose diagnosis reads what wakeups.py drops."""
    lws = _cached_set(informers, meta)
    return lws is not None and wants_not_ready_events(lws)


def _placed_exclusively(informers: SharedInformers, meta: Any) -> bool:
    """The pod's set pins its workers to the leader's topology domain (or is not cached: then
    every leader event counts), so the leader's binding is what lets its workers start."""
    lws = _cached_set(informers, meta)
    return lws is None or exclusive_topology_key(lws) is not None


def _pod_update_matters(informers: SharedInformers) -> Any:
    def matters(old: Pod, new: Pod) -> bool:
        placed = lambda: _placed_exclusively(informers, new.metadata)  # noqa: E731 - read only when bound
        if pod_update_matters(old, new, placed) and not idle_worker(new):
            return True
        return _diagnosed(informers, new.metadata)

    return matters


def _pod_add_matters(informers: SharedInformers) -> Any:
    def matters(pod: Pod) -> bool:
        return not idle_worker(pod) or _diagnosed(informers, pod.metadata)

    return matters


def _worker_statefulset_update_matters(informers: SharedInformers) -> Any:
    def matters(old: StatefulSet, new: StatefulSet) -> bool:
        return worker_statefulset_update_matters(old, new) or _diagnosed(informers, new.metadata)

    return matters


def _held_pods(informers: SharedInformers, namespace: str, set_name: str) -> list[ObjectKey]:
    return informers.set_held_pod_keys(namespace, set_name)


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


def _gated_leader_waker(informers: SharedInformers, controller: Controller) -> FuncHandler[Pod]:
    """Wake the gated leaders of a set (group-replacement gate) when one of its pods is deleted (a slot or a
    tearing-down group may be freed) or a gated leader is created (the FIFO order changed)."""

    def wake(pod: Pod) -> None:
        meta = pod.metadata
        set_name = (meta.labels or {}).get(c.LABEL_SET_NAME)
        if not set_name:
            return
        for key in informers.gated_leader_keys(meta.namespace or "", set_name):
            controller.queue.add(key)

    def added(pod: Pod) -> None:
        if behind_replacement_gate(pod):
            wake(pod)

    return FuncHandler(add=added, delete=wake)


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


def _predecessor_worker_waker(informers: SharedInformers, controller: Controller) -> FuncHandler[Pod]:
    """Wake the leader when a pod appears controlled by a predecessor of its worker StatefulSet:
    one of the same name whose UID is not the cached one's.

    kube-controller-manager can create such a pod after that StatefulSet is gone, from a cache that
    lags across an API server restart, and its garbage collector then never deletes it: the
    collector saw the name come back, not the old UID go. The pod holds a name the new StatefulSet
    needs, so the group and any rollout waiting for it stall for good. Only the leader's reconcile
    deletes it (`WorkerCleanup.orphans`); the StatefulSet's own events, which used to wake the leader
    after its creation, no longer do (wakeups.py)."""

    def added(pod: Pod) -> None:
        meta = pod.metadata
        if c.LABEL_SET_NAME not in (meta.labels or {}):
            return
        owner = controller_of(meta)
        if owner is None or owner.kind != "StatefulSet":
            return
        cached = informers.statefulsets.store.get(ObjectKey(meta.namespace or "", owner.name))
        if cached is not None and cached.metadata.uid != owner.uid:
            for key in _owner_leader(cached.metadata, cached):
                controller.queue.add(key)

    return FuncHandler(add=added)


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
        clock=manager.clock,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    informers.pods.add_handler(FuncHandler(delete=reconciler.snapshots.remember))
    reconciler.startup.created_workers.forget_on_delete(informers.statefulsets)
    informers.pods.add_handler(_gated_leader_waker(informers, controller))
    informers.pods.add_handler(_worker_deletion_waker(controller))
    informers.pods.add_handler(_predecessor_worker_waker(informers, controller))
    controller.watch(
        informers.pods,
        own_key,
        predicate=_set_pods_only,
        update_matters=_pod_update_matters(informers),
        add_matters=_pod_add_matters(informers),
    )
    controller.watch(
        informers.statefulsets, _owner_leader, update_matters=_worker_statefulset_update_matters(informers)
    )
    controller.watch(informers.lws, _held_pods_of_lws(informers))
    controller.watch(informers.statefulsets, _held_pods_of_leader_statefulset(informers))
    controller.watch(informers.deployments, _held_pods_of_leader_statefulset(informers))
    manager.add_controller(controller)
    return controller
