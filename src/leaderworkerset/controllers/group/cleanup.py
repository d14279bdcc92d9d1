"""Worker pods and StatefulSets that would outlive their group: a terminating leader's workers
(podTerminationPolicy Parallel, C13), and pods a predecessor group left holding this group's names
when the garbage collector missed them (issues 12 and 14). Every delete is guarded by a UID."""

from __future__ import annotations

import structlog

from leaderworkerset.controllers.group.reads import group_pods_of
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.lifecycle.restart import orphaned_workers
from leaderworkerset.core.lifecycle.termination import lingering_worker_pod, worker_statefulset_to_delete
from leaderworkerset.core.objects import (
    MutableObj,
    controller_owner,
    is_deleting,
    lws_size,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import PODS, STATEFULSETS

log = structlog.get_logger(__name__)


class WorkerCleanup:
    def __init__(self, client: KubeClient, informers: SharedInformers) -> None:
        self._client = client
        self._informers = informers

    async def with_leader(self, lws: MutableObj | None, leader: MutableObj) -> None:
        """podTerminationPolicy Parallel: a terminating leader takes its workers with it."""
        cached = self._informers.statefulset(namespace_of(leader), name_of(leader))
        doomed = worker_statefulset_to_delete(lws, leader, cached)
        if doomed is None:
            return
        if await self._client.delete_incarnation(
            STATEFULSETS, namespace_of(doomed), name_of(doomed), uid_of(doomed)
        ):
            log.info("deleted worker statefulset with its leader", pod=name_of(leader), policy="Parallel")

    async def names_taken(self, lws: MutableObj, leader: MutableObj) -> bool:
        """A predecessor's worker pod still holds one of this group's names: creating
        the worker StatefulSet now would put kube-controller-manager into exponential back-off.

        Such a pod normally goes with its StatefulSet (the garbage collector deletes it), but the
        collector can miss it across an API server restart, and then the name would stay
        taken for good: a pod whose controlling StatefulSet a fresh read shows gone (or replaced)
        is deleted here, guarded by its UID, and its deletion wakes this leader again."""
        namespace = namespace_of(leader)
        taken = lingering_worker_pod(leader, lws_size(lws), lambda name: self._informers.pod(namespace, name))
        if taken is None:
            return False
        log.info("worker pod name still taken, waiting for it to go before creating the worker "
                 "statefulset", namespace=namespace, pod=name_of(leader), worker=taken)  # fmt: skip
        pod = self._informers.pod(namespace, taken)
        owner = controller_owner(pod) if pod is not None else None
        if pod is None or owner is None or is_deleting(pod):
            return True
        fresh = await self._client.get_or_none(STATEFULSETS, namespace, str(owner.get("name", "")))
        gone = fresh is None or uid_of(fresh) != owner.get("uid")
        if gone and await self._client.delete_incarnation(PODS, namespace, taken, uid_of(pod)):
            log.info("deleted a worker pod whose statefulset is gone", pod=taken, namespace=namespace)
        return True

    async def orphans(self, leader: MutableObj, workers: MutableObj) -> None:
        """Delete worker pods still controlled by the group's previous worker StatefulSet.

        The garbage collector deletes them once that StatefulSet is gone, but it can miss the
        deletion across an API server restart; the new StatefulSet then cannot create its pods under
        their names and the group (and any rollout waiting for it) stalls for good. A fresh read
        first confirms that the name now maps to another StatefulSet, so a lagging cache (one that
        still holds the old StatefulSet) never deletes the new one's pods; each delete is guarded by
        the pod's UID.
        """
        pods = group_pods_of(self._informers, leader)
        if not orphaned_workers(workers, pods):
            return
        fresh = await self._client.get_or_none(STATEFULSETS, namespace_of(workers), name_of(workers))
        if fresh is None or is_deleting(fresh):
            return
        for pod in orphaned_workers(fresh, pods):
            if await self._client.delete_incarnation(PODS, namespace_of(pod), name_of(pod), uid_of(pod)):
                log.info(
                    "deleted a worker pod left by the group's previous worker statefulset",
                    pod=name_of(pod), namespace=namespace_of(pod), statefulset=name_of(fresh),
                )  # fmt: skip
