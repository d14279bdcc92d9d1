"""Wiring of the disruption-budget controller: its caches and watches.

Its own caches are small by construction: nodes filtered on the server to the cordoned ones
(`spec.unschedulable=true`; uncordoning drops a node from the selection, which the watch reports
as a deletion), and PodDisruptionBudgets filtered to the ones it made. Pods and sets come from the
shared caches; a pod wakes its set only when the set has a disruption budget.
"""

from __future__ import annotations

from collections.abc import Iterable

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.disruptionbudget.reconciler import (
    BY_SET,
    BudgetCaches,
    DisruptionBudgetReconciler,
)
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.objects import annotations_of
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.controller import Controller, label_mapper, own_key
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import MetaLike, ObjectKey, key_of
from leaderworkerset.runtime.projections import METADATA_CODEC
from leaderworkerset.runtime.resources import NODES, PODDISRUPTIONBUDGETS
from leaderworkerset.runtime.store import label_values

CONTROLLER_NAME = "disruptionbudget"
CORDONED_NODES = "spec.unschedulable=true"


def _by_set(meta: MetaLike, _obj: object) -> Iterable[str]:
    name = (meta.labels or {}).get(c.LABEL_SET_NAME)
    return () if name is None else (label_values(meta.namespace or "", name),)


def declare_caches(manager: Manager, informers: SharedInformers, namespace: str | None) -> BudgetCaches:
    cache = manager.cache
    nodes = cache.informer(NODES, METADATA_CODEC, field_selector=CORDONED_NODES, name="cordoned-nodes")
    budgets = cache.informer(
        PODDISRUPTIONBUDGETS,
        DictCodec(),
        namespace=namespace,
        label_selector=ext.LABEL_GROUP_DISRUPTION_BUDGET,
        indexers={BY_SET: _by_set},
    )
    return BudgetCaches(informers, nodes, budgets)


def setup(manager: Manager, informers: SharedInformers, *, namespace: str | None = None) -> Controller:
    """Create the controller, declare its caches and watches, and add it to the manager."""
    caches = declare_caches(manager, informers, namespace)
    reconciler = DisruptionBudgetReconciler(
        manager.client, caches, manager.event_recorder(c.EVENT_COMPONENT_LWS), manager.clock
    )
    controller = Controller(CONTROLLER_NAME, reconciler.reconcile, metrics=manager.metrics)

    def opted_in(key: ObjectKey) -> bool:
        lws = informers.lws.store.get(key)
        return lws is not None and ext.ANNOTATION_DISRUPTION_BUDGET in annotations_of(lws)

    def sets_with_budgets(_meta: MetaLike, _obj: object) -> Iterable[ObjectKey]:
        """A node cordoned or uncordoned concerns every set with a budget (few sets opt in)."""
        meta = informers.lws.store.codec.meta
        return [key for lws in informers.lws.store.list() if opted_in(key := key_of(meta(lws)))]

    def pod_to_set(meta: MetaLike, obj: object) -> Iterable[ObjectKey]:
        return [key for key in label_mapper(c.LABEL_SET_NAME)(meta, obj) if opted_in(key)]

    def asks_for_budgets(_meta: MetaLike, lws: object) -> bool:
        """Only sets that ask (an update passes when either side asks, so removing the annotation
        still deletes the budgets; budgets left from before a restart wake their set through the
        budget watch). Every status write of every set woke this controller before."""
        return ext.ANNOTATION_DISRUPTION_BUDGET in annotations_of(lws)  # type: ignore[arg-type]

    controller.watch(informers.lws, own_key, predicate=asks_for_budgets)
    controller.watch(informers.pods, pod_to_set)
    controller.watch(caches.cordoned_nodes, sets_with_budgets)
    controller.watch(caches.budgets, label_mapper(c.LABEL_SET_NAME))
    reconciler.memo.forget_on_delete(caches.budgets)
    manager.add_controller(controller)
    return controller
