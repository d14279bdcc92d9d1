"""The pod (group) controller (spec §3.C), Ordinal identity: restart policies and worker startup.

One reconcile of a pod key `<namespace>/<pod>`:
  1. replay the deletion snapshots of workers with that name (a StatefulSet may already have
     re-created a same-name pod, so the snapshot is the only trace of the failure);
  2. for the live pod: apply the restart policy — a failed group is recreated by deleting its
     leader with Foreground propagation, exactly once per failure;
  3. for a leader: ensure the per-replica Service (UniquePerReplica), then — once the startup
     policy and exclusive placement allow — create its worker StatefulSet from the leader's
     revision. Worker StatefulSets are create-only: a group changes only by being recreated.

Not handled yet (v1.0 features of this controller): maxGroupRestarts budgets and their
finalizers, Hash identity (group-ready condition, replacement gate).
The scheduler provider (if configured) makes the group's PodGroup before its workers exist.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import Obj, SharedInformers, as_dict
from leaderworkerset.controllers.leaderworkerset import error_text, lws_ref, record
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core.gang import SchedulingError
from leaderworkerset.core.groups import (
    is_deleting,
    is_leader_pod,
    labels_of,
    name_of,
    namespace_of,
    revision_key_of,
    uid_of,
)
from leaderworkerset.core.restart import (
    FOREGROUND,
    MISSING_REVISION_REQUEUE_SECONDS,
    RestartAction,
    RestartDecision,
    WorkerGate,
    check_group_pod,
    decide_restart,
    exclusive_topology_key,
    misannotated_leader_event,
    placement_gate,
    replay_deleted_pod,
    restart_lookup,
    startup_gate,
    topology_node_selector,
    worker_statefulset_created_event,
    worker_statefulset_failed_event,
)
from leaderworkerset.core.revision import find_revision, revision_spec
from leaderworkerset.core.services import replica_service
from leaderworkerset.core.statefulsets import require_leader_dns, worker_statefulset
from leaderworkerset.core.workloads import scheduling_template_annotations
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.controller import Controller, Result, own_key, owner_mapper
from leaderworkerset.runtime.errors import is_already_exists, is_conflict, is_not_found
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import Pod
from leaderworkerset.runtime.reflector import FuncHandler
from leaderworkerset.runtime.resources import NODES, PODS, SERVICES, STATEFULSETS

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "pod"
DEFAULT_MAX_CONCURRENT = 4
# Leaders this process deleted for a group restart, remembered so a stale cache read of the same
# leader cannot delete it (and announce RecreateGroup) a second time.
_DELETED_LEADERS_MEMORY = 10_000
# Worker deletion snapshots waiting for their reconcile; beyond this, the oldest are dropped.
_SNAPSHOT_MEMORY = 10_000
_DELETED_MARK = "1970-01-01T00:00:00Z"


class GroupReconciler:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        provider: SchedulerProvider | None = None,
    ) -> None:
        self._provider = provider
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._snapshots: OrderedDict[ObjectKey, list[Obj]] = OrderedDict()
        self._deleted_leaders: OrderedDict[str, None] = OrderedDict()

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
        await self._replay_deletions(key)
        pod = self._informers.pod(key.namespace, key.name)
        if pod is None:
            return None
        check_group_pod(pod)
        lws = self._lws_of(pod)
        if lws is None:
            return None
        if await self._restart_policy(pod, lws):
            return None
        if not is_leader_pod(pod):
            return None
        return await self._reconcile_leader(pod, lws)

    async def _replay_deletions(self, key: ObjectKey) -> None:
        """Apply the restart policy to each deletion snapshot; a failed one is kept for the retry."""
        pending = self._snapshots.pop(key, [])
        while pending:
            try:
                await self._restart_policy(pending[0])
            except Exception:
                self._snapshots[key] = [*pending, *self._snapshots.get(key, [])]
                raise
            pending.pop(0)

    def _lws_of(self, pod: Obj) -> Obj | None:
        lws = self._informers.lws.store.get(ObjectKey(namespace_of(pod), labels_of(pod)[c.LABEL_SET_NAME]))
        if lws is None or (lws.get("spec") or {}).get("groupIdentity") == c.GROUP_IDENTITY_HASH:
            return None
        return lws

    # ----- restart policy -------------------------------------------------------------------------
    async def _restart_policy(self, pod: Obj, lws: Obj | None = None) -> bool:
        """Apply the group restart policy; True when the pod's reconcile ends here."""
        lws = lws or self._lws_of(pod)
        if lws is None:
            return False
        lookup = restart_lookup(lws, pod)
        if lookup is None:
            return False
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
        if decision.action is RestartAction.DELETE_LEADER:
            await self._delete_leader(lws, namespace, decision)
        return decision.stop

    async def _delete_leader(self, lws: Obj, namespace: str, decision: RestartDecision) -> None:
        """Foreground deletion (workers go first), preconditioned on the leader's UID so a
        same-name replacement is never hit; at most once per leader incarnation."""
        uid = decision.leader_uid
        if uid in self._deleted_leaders:
            return  # already deleted by us; the cache has not caught up yet
        try:
            await self._client.delete(PODS, namespace, decision.leader_name, propagation=FOREGROUND, uid=uid)
        except Exception as err:
            # Gone, or replaced by a same-name leader (UID precondition): nothing left to restart.
            if is_not_found(err) or is_conflict(err):
                return
            raise
        self._deleted_leaders[uid] = None
        while len(self._deleted_leaders) > _DELETED_LEADERS_MEMORY:
            self._deleted_leaders.popitem(last=False)
        if decision.event is not None:
            record(self._recorder, lws, decision.event)

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
        if startup_gate(lws, leader) is not WorkerGate.PROCEED:
            return None  # size 1, or waiting for a leader update that re-triggers us
        if self._informers.statefulset(namespace_of(leader), name_of(leader)) is not None:
            return None  # never updated: a group changes only by being recreated
        if placement_gate(lws, leader) is not WorkerGate.PROCEED:
            return None  # the leader's scheduling re-triggers us
        # The cached leader may lag its worker StatefulSet's watch (another stream): read it fresh
        # before building a group from its revision. This GET happens once per group creation.
        fresh = await self._fresh_pod(leader)
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
        await self._create_worker_statefulset(lws, fresh, revision)
        return None

    async def _fresh_pod(self, pod: Obj) -> Obj | None:
        try:
            return await self._client.get(PODS, namespace_of(pod), name_of(pod))
        except Exception as err:
            if is_not_found(err):
                return None
            raise

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

    async def _create_worker_statefulset(self, lws: Obj, leader: Obj, revision: Mapping[str, Any]) -> None:
        """`leader` is the full pod (the projection lacks the containers, read for TPU requests)."""
        body = worker_statefulset(
            lws,
            leader,
            revision_spec(lws, revision),
            node_selector=await self._node_selector(lws, leader),
            extra_template_annotations=scheduling_template_annotations(lws),
        )
        try:
            await self._client.create(STATEFULSETS, body)
        except Exception as err:
            if is_already_exists(err):
                return  # upstream ignores this silently, without an event
            record(self._recorder, lws, worker_statefulset_failed_event(leader, error_text(err)))
            raise
        record(self._recorder, lws, worker_statefulset_created_event(leader))


# ----- wiring ------------------------------------------------------------------------------------------


def _set_pods_only(meta: Any, _obj: object) -> bool:
    return c.LABEL_SET_NAME in (meta.labels or {})


def _owner_leader(meta: Any, obj: object) -> Iterable[ObjectKey]:
    """Worker StatefulSets wake the leader pod that controls them."""
    return owner_mapper("Pod", "")(meta, obj)


def setup(
    manager: Manager,
    informers: SharedInformers,
    *,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    provider: SchedulerProvider | None = None,
) -> Controller:
    """Create the pod controller, declare its watches and add it to the manager."""
    recorder = manager.event_recorder(c.EVENT_COMPONENT_LWS)
    reconciler = GroupReconciler(manager.client, informers, recorder, provider)
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    informers.pods.add_handler(FuncHandler(delete=reconciler.remember_deleted))
    controller.watch(informers.pods, own_key, predicate=_set_pods_only)
    controller.watch(informers.statefulsets, _owner_leader)
    manager.add_controller(controller)
    return controller
