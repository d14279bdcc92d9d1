"""One reconcile of a set's group disruption budgets: read the caches, decide, apply.

The decision is `core.disruptionbudget.decision`'s; this shell reads the set, its pods, the cordoned nodes
and its PodDisruptionBudgets from watch-fed caches (no LIST per reconcile), server-side applies
the budgets that change (field manager `lws`) and deletes the ones no group needs. A set without a
valid annotation keeps no budget: its leftovers (the annotation was removed, or holds a bad value
that the LWS controller reports) are deleted, so a locked budget never outlives the controller's
intent to release it.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.events import lws_ref
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.memos import WriteMemo
from leaderworkerset.core.disruptionbudget.annotation import budget_groups
from leaderworkerset.core.disruptionbudget.decision import (
    DisruptionBudgetDecision,
    GroupBudget,
    GroupDisruptionView,
    budget_name,
    group_of_pdb,
    group_pdb,
    is_released,
    observe_groups,
    pending_pods,
    plan_budgets,
)
from leaderworkerset.core.disruptionbudget.drainsurge import mark_patch, surge_allowance
from leaderworkerset.core.objects import (
    MutableObj,
    is_deleting,
    is_hash,
    lws_replicas,
    name_of,
    namespace_of,
    owner_uids,
    uid_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.errors import is_not_found
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import MetadataOnly
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import PODDISRUPTIONBUDGETS, PODS
from leaderworkerset.runtime.store import label_values

log = structlog.get_logger(__name__)

BY_SET = "lws-name"


@dataclass(frozen=True)
class BudgetCaches:
    """What the controller reads: the shared LWS and pod caches, plus two of its own."""

    shared: SharedInformers
    cordoned_nodes: Informer[MetadataOnly]  # only nodes with spec.unschedulable=true
    budgets: Informer[MutableObj]  # only the budgets this controller made

    def cordoned(self) -> frozenset[str]:
        return frozenset(node.metadata.name or "" for node in self.cordoned_nodes.store.list())

    def set_budgets(self, namespace: str, lws_name: str) -> list[MutableObj]:
        return list(self.budgets.store.by_index(BY_SET, label_values(namespace, lws_name)))


class DisruptionBudgetReconciler:
    def __init__(
        self, client: KubeClient, caches: BudgetCaches, recorder: EventRecorder, clock: Clock
    ) -> None:
        self._client = client
        self._clock = clock
        self._caches = caches
        self._recorder = recorder
        # Our own writes until the budget watch shows them: a round right after a release must not
        # read the group as locked and release another one.
        self.memo = WriteMemo()
        self._written: dict[ObjectKey, set[str]] = {}  # budget names written, by set

    async def reconcile(self, key: ObjectKey) -> Result | None:
        lws = self._caches.shared.lws.store.get(key)
        budgets = self._budgets(key)
        if lws is None or is_deleting(lws):
            self._written.pop(key, None)
            return None  # the budgets are owned by the set: garbage collection removes them
        groups = budget_groups(lws)
        if groups is None:
            for pdb in budgets.values():
                await self._delete(key, name_of(pdb))
            return None
        pods = self._caches.shared.set_pods(key.namespace, key.name)
        views = observe_groups(lws, pods, self._caches.cordoned(), budgets, self._clock.wall())
        deployment = self._caches.shared.deployment(key.namespace, key.name)
        surge, no_surge_why = surge_allowance(lws, pods, deployment)
        plan = plan_budgets(lws, views, budget=groups, replicas=lws_replicas(lws), surge=surge)
        await self._mark(lws, views, plan.decision)
        for group in plan.delete:
            if group in budgets:
                await self._delete(key, budget_name(lws, group))
        for group, wanted in plan.apply.items():
            current = budgets.get(group)
            if current is None or _differs(current, wanted) or _stale(current, lws):
                body = group_pdb(lws, group, released=wanted.released, pending=wanted.pending)
                await self._apply(key, body)
        self._announce(lws, plan.decision, views, no_surge_why if is_hash(lws) else "")
        settling = plan.decision.recheck_after
        return None if settling is None else Result(requeue_after=settling)

    def _budgets(self, key: ObjectKey) -> dict[str, MutableObj]:
        """The set's budgets by group, our writes the watch has not shown yet included (a budget
        created a moment ago is not in the cache at all)."""
        lws = self._caches.shared.lws.store.get(key) or {"metadata": {"name": key.name}}
        cached = {name_of(pdb): pdb for pdb in self._caches.set_budgets(key.namespace, key.name)}
        seen_up_to = self._caches.budgets.store.resource_version
        found: dict[str, MutableObj] = {}
        for name in {*cached, *self._written.get(key, set())}:
            pdb = self.memo.freshest(ObjectKey(key.namespace, name), cached.get(name), seen_up_to)
            if pdb is None:
                self._written.get(key, set()).discard(name)  # deleted since we wrote it
                continue
            group = group_of_pdb(lws, pdb)
            if group is not None and not is_deleting(pdb):
                found[group] = pdb
        return found

    async def _apply(self, key: ObjectKey, body: MutableObj) -> None:
        written = await self._client.apply(PODDISRUPTIONBUDGETS, body)
        self.memo.remember(ObjectKey(key.namespace, name_of(body)), written)
        self._written.setdefault(key, set()).add(name_of(body))

    async def _delete(self, key: ObjectKey, name: str) -> None:
        self.memo.forget(ObjectKey(key.namespace, name))
        self._written.get(key, set()).discard(name)
        try:
            await self._client.delete(PODDISRUPTIONBUDGETS, key.namespace, name)
        except Exception as err:
            if not is_not_found(err):
                raise

    async def _mark(
        self, lws: MutableObj, views: list[GroupDisruptionView], decision: DisruptionBudgetDecision
    ) -> None:
        """Mark (or unmark) the leaders of the groups replaced through the surge: the LWS and pod
        controllers read the mark to add their replacement to the Deployment and admit it."""
        leaders = {view.group: view.leader for view in views}
        changes = [(g, True) for g in decision.newly_surged] + [(g, False) for g in decision.unsurged]
        for group, marked in changes:
            leader = leaders.get(group)
            if leader is None:
                continue
            try:
                await self._client.merge_patch(PODS, namespace_of(lws), leader, mark_patch(marked))
            except Exception as err:
                if not is_not_found(err):
                    raise  # a leader gone meanwhile: its group is no longer there to replace

    def _announce(
        self,
        lws: MutableObj,
        decision: DisruptionBudgetDecision,
        views: list[GroupDisruptionView],
        no_surge_why: str,
    ) -> None:
        ref = lws_ref(lws)
        ready = {view.group for view in views if view.ready}
        for group in decision.newly_surged:
            note = f"group {group} is on a cordoned node: a replacement group is made first (surge)"
            self._recorder.normal(ref, ext.EVENT_GROUP_SURGED_FOR_DRAIN, c.EVENT_ACTION_UPDATE, note)
        for group in decision.newly_released:
            note = f"group {group} released for eviction: {decision.down} of the budget's groups down"
            self._recorder.normal(ref, ext.EVENT_GROUP_RELEASED_FOR_DRAIN, c.EVENT_ACTION_UPDATE, note)
            if no_surge_why and group in ready:
                note = f"group {group} released without a replacement first: {no_surge_why}"
                self._recorder.normal(ref, ext.EVENT_DRAIN_WITHOUT_SURGE, c.EVENT_ACTION_UPDATE, note)
        for group in decision.newly_locked:
            note = f"group {group} is Ready off cordoned nodes: its budget is closed again"
            self._recorder.normal(ref, ext.EVENT_GROUP_LOCKED_AFTER_DRAIN, c.EVENT_ACTION_UPDATE, note)
        if decision.newly_released or decision.newly_locked or decision.newly_surged:
            log.info(
                "group disruption budgets",
                released=list(decision.released),
                waiting=list(decision.waiting),
                surged=list(decision.newly_surged),
                down=decision.down,
            )


def _differs(pdb: MutableObj, wanted: GroupBudget) -> bool:
    return is_released(pdb) != wanted.released or pending_pods(pdb) != wanted.pending


def _stale(pdb: MutableObj, lws: MutableObj) -> bool:
    """A budget made for another incarnation of the set, or locked at a size the set no longer has."""
    wanted = group_pdb(lws, "", released=is_released(pdb))
    if (pdb.get("spec") or {}).get("minAvailable") != wanted["spec"]["minAvailable"]:
        return True
    return uid_of(lws) not in owner_uids(pdb)
