"""Worker startup for a leader: its per-replica Service (UniquePerReplica), the
scheduler provider's PodGroup, the Hash admission gate, then — once the startup policy and
exclusive placement allow — its worker StatefulSet built from the leader's revision. Worker
StatefulSets are create-only: a group changes only by being recreated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref, record
from leaderworkerset.controllers.group.cleanup import WorkerCleanup
from leaderworkerset.controllers.group.identity import HashIdentity
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.memos import StatefulSetDeletions, WriteMemo
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core.desired.services import replica_service
from leaderworkerset.core.desired.statefulsets import require_leader_dns, worker_statefulset
from leaderworkerset.core.groups.state import has_replacement_gate, statefulset_ready
from leaderworkerset.core.hashidentity import GROUP_REPLACEMENT_REQUEUE_SECONDS
from leaderworkerset.core.lifecycle import restart
from leaderworkerset.core.lifecycle.termination import WORKER_STATEFULSET_TERMINATING_REQUEUE_SECONDS
from leaderworkerset.core.objects import (
    MutableObj,
    is_deleting,
    is_hash,
    name_of,
    namespace_of,
    revision_key_of,
    uid_of,
)
from leaderworkerset.core.rollout.revision import find_revision, revision_spec
from leaderworkerset.core.scheduling.gang import SchedulingError
from leaderworkerset.core.scheduling.workloads import scheduling_template_annotations
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.controller import Result
from leaderworkerset.runtime.errors import is_already_exists
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.resources import NODES, PODS, SERVICES, STATEFULSETS

log = structlog.get_logger(__name__)


class Startup:
    def __init__(
        self,
        client: KubeClient,
        informers: SharedInformers,
        recorder: EventRecorder,
        provider: SchedulerProvider | None,
        *,
        identity: HashIdentity,
        cleanup: WorkerCleanup,
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._provider = provider
        self._identity = identity
        self._cleanup = cleanup
        self._sts_deletions = StatefulSetDeletions(informers.statefulsets, informers.pods)
        # Worker StatefulSets this process created, until the watch shows them: a reconcile of the
        # same leader in between would otherwise create it again, to an AlreadyExists.
        self.created_workers = WriteMemo()

    async def reconcile(self, leader: MutableObj, lws: MutableObj) -> Result | None:
        event = restart.misannotated_leader_event(lws, leader)
        if event is not None:
            record(self._recorder, lws, event)
            return None
        if is_deleting(leader):
            return None
        await self._ensure_replica_service(lws, leader)
        await self._ensure_pod_group(lws, leader)
        if has_replacement_gate(leader) and not await self._identity.admit(lws, leader):
            return Result(requeue_after=GROUP_REPLACEMENT_REQUEUE_SECONDS)
        if restart.startup_gate(lws, leader) is not restart.WorkerGate.PROCEED:
            return None  # size 1, or waiting for a leader update that re-triggers us
        key = ObjectKey(namespace_of(leader), name_of(leader))
        statefulsets = self._informers.statefulsets.store
        cached = self._informers.statefulset(key.namespace, key.name)
        existing = self.created_workers.freshest(key, cached, statefulsets.resource_version)
        if existing is not None and is_deleting(existing):
            # A predecessor's group still going away (podTerminationPolicy): build ours only once it is gone.
            return Result(requeue_after=WORKER_STATEFULSET_TERMINATING_REQUEUE_SECONDS)
        if existing is not None and restart.foreign_worker_statefulset(existing, leader):
            self._report_foreign_workers(lws, leader, existing)
            return Result(requeue_after=restart.FOREIGN_WORKERS_RECHECK_SECONDS)
        if existing is not None:
            await self._cleanup.orphans(leader, existing)
            # Never updated: a group changes only by being recreated. Hash leaders mirror its
            # readiness into their group-ready condition, which gates the leader's own readiness.
            if is_hash(lws):
                await self._identity.sync_group_ready(leader, statefulset_ready(existing))
            return None
        if restart.placement_gate(lws, leader) is not restart.WorkerGate.PROCEED:
            return None  # the leader's scheduling re-triggers us
        if await self._cleanup.names_taken(lws, leader):
            return None  # the deletion of that pod wakes this leader (worker_deletion_waker)
        fresh = await self._leader_to_build_from(leader)
        if fresh is None or uid_of(fresh) != uid_of(leader) or is_deleting(fresh):
            return None  # replaced or going away; the watch brings the next event
        revision = find_revision(
            lws, revision_key_of(fresh), self._informers.set_revisions(namespace_of(fresh), name_of(lws))
        )
        if revision is None:
            return Result(requeue_after=restart.MISSING_REVISION_REQUEUE_SECONDS)
        require_leader_dns(fresh)
        if restart.placement_gate(lws, fresh) is not restart.WorkerGate.PROCEED:
            return None  # the leader's scheduling re-triggers us
        return await self._create_worker_statefulset(lws, fresh, revision)

    async def _leader_to_build_from(self, leader: MutableObj) -> MutableObj | None:
        """The leader a new worker StatefulSet is built from: the cached one when the pod cache has
        seen the worker StatefulSet's absence (`StatefulSetDeletions`), else a fresh read, so no
        group is built for a leader that is already gone. Upstream reads its cache only; the GET
        here happens only when the pod cache lags (it was one GET per group)."""
        if self._sts_deletions.seen_by_pods(ObjectKey(namespace_of(leader), name_of(leader))):
            return leader
        return await self._client.get_or_none(PODS, namespace_of(leader), name_of(leader))

    async def _ensure_pod_group(self, lws: MutableObj, leader: MutableObj) -> None:
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

    async def _ensure_replica_service(self, lws: MutableObj, leader: MutableObj) -> None:
        service = replica_service(lws, leader)
        if service is None or self._informers.has_service(namespace_of(leader), name_of(service)):
            return
        try:
            await self._client.create(SERVICES, service)
        except Exception as err:
            if not is_already_exists(err):
                raise

    async def _node_selector(self, lws: MutableObj, leader: MutableObj) -> dict[str, str] | None:
        topology_key = restart.exclusive_topology_key(lws)
        if topology_key is None:
            return None
        node_name = str((leader.get("spec") or {}).get("nodeName"))
        try:
            node = await self._client.get(NODES, None, node_name)
        except Exception as err:
            raise RuntimeError(f"getting node {node_name!r}: {err}") from err
        return restart.topology_node_selector(node, topology_key)

    async def _create_worker_statefulset(
        self, lws: MutableObj, leader: MutableObj, revision: Mapping[str, Any]
    ) -> Result | None:
        """`leader` is the cached projection (it keeps the containers' TPU requests) or a full pod."""
        extra = dict(scheduling_template_annotations(lws))
        if is_hash(lws):
            extra[c.ANNOTATION_GROUP_IDENTITY] = c.GROUP_IDENTITY_HASH
        body = worker_statefulset(
            lws,
            leader,
            revision_spec(lws, revision),
            node_selector=await self._node_selector(lws, leader),
            extra_template_annotations=extra,
        )
        try:
            created = await self._client.create(STATEFULSETS, body)
        except Exception as err:
            if is_already_exists(err):
                return await self._worker_statefulset_exists(lws, leader)
            record(self._recorder, lws, restart.worker_statefulset_failed_event(leader, error_text(err)))
            raise
        self.created_workers.remember(ObjectKey(namespace_of(leader), name_of(leader)), created)
        record(self._recorder, lws, restart.worker_statefulset_created_event(leader))
        return None

    async def _worker_statefulset_exists(self, lws: MutableObj, leader: MutableObj) -> Result | None:
        """The create met a StatefulSet of the worker name. Ours (its create raced the cache) is no
        failure, as upstream; one outside our caches (no set-name label) that we never made is
        reported, where upstream stays silent and the group never gets workers."""
        existing = await self._client.get_or_none(STATEFULSETS, namespace_of(leader), name_of(leader))
        if existing is None or not restart.foreign_worker_statefulset(existing, leader):
            return None
        self._report_foreign_workers(lws, leader, existing)
        return Result(requeue_after=restart.FOREIGN_WORKERS_RECHECK_SECONDS)

    def _report_foreign_workers(self, lws: MutableObj, leader: MutableObj, workers: MutableObj) -> None:
        """Left alone (it is not ours to delete or adopt), but never in silence."""
        event = restart.foreign_worker_statefulset_event(workers, leader)
        log.warning("a statefulset we did not make holds the group's worker name", message=event.message)
        record(self._recorder, lws, event)
