"""The Volcano provider: `scheduling.volcano.sh/v1beta1` PodGroups.

H1 (no `spec.scheduling`): the pod webhook names the group's PodGroup on every pod
(`scheduling.k8s.io/group-name`) and the pod controller creates it for each leader, controlled by
the leader pod, so a recreated group gets a fresh PodGroup through garbage collection.
H2 (`spec.scheduling`, replica-level gang only): the LWS controller creates one PodGroup per group
index at the current revision, controlled by the LWS, before the leader StatefulSet exists.
With groupIdentity Hash there is no index to enumerate: the pod controller creates each group's
PodGroup (`<lws>-<groupKey>-<revision>`, the name the webhook stamps) from the admitted leader,
controlled by that leader as in H1, while the replacement gate still holds it; a replaced or
scaled-down group takes its PodGroup with it through garbage collection.

PodGroups are read from a label-filtered watch cache; a PodGroup of that name that belongs to
someone else is never touched (an error, and an `UnexpectedPodGroupOwner` event upstream's way).
"""

from __future__ import annotations

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj, controller_owner, name_of, namespace_of
from leaderworkerset.core.scheduling import gang
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.controller import Controller, owner_mapper
from leaderworkerset.runtime.errors import is_already_exists, is_not_found
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import ResourceRef

log = structlog.get_logger(__name__)

VOLCANO_POD_GROUPS = ResourceRef("scheduling.volcano.sh", "v1beta1", gang.VOLCANO_POD_GROUP_KIND, "podgroups")


class VolcanoProvider:
    name = c.SCHEDULER_PROVIDER_VOLCANO

    def __init__(self, client: KubeClient, pod_groups: Informer[MutableObj]) -> None:
        self._client = client
        self._pod_groups = pod_groups

    @classmethod
    def setup(cls, manager: Manager, namespace: str | None = None) -> VolcanoProvider:
        informer = manager.cache.informer(
            VOLCANO_POD_GROUPS, DictCodec(), namespace=namespace, label_selector=c.LABEL_SET_NAME
        )
        return cls(manager.client, informer)

    async def reconcile_scheduling(self, lws: MutableObj, replicas: int, revision: str) -> None:
        for desired in gang.volcano_replica_pod_groups(lws, replicas, revision):
            await self._ensure(desired)

    async def create_pod_group_if_not_exists(self, lws: MutableObj, leader: MutableObj) -> None:
        if not gang.volcano_leader_pod_group_wanted(lws):
            return  # with spec.scheduling, Ordinal: the LWS controller owns these PodGroups
        desired = gang.volcano_leader_pod_group(lws, leader)
        if name_of(desired) != gang.leader_pod_group_name(leader):
            # The webhook stamped another name (an older revision label scheme): follow the pod.
            desired["metadata"]["name"] = gang.leader_pod_group_name(leader)
        if not name_of(desired):
            raise gang.SchedulingError(
                c.REASON_POD_GROUP_CREATE_FAILED,
                f"leader pod {namespace_of(leader)}/{name_of(leader)} has no "
                f"{c.ANNOTATION_SCHEDULING_GROUP_NAME} annotation",
            )
        await self._ensure(desired)

    def inject_pod_group_metadata(self, pod: MutableObj) -> None:
        gang.inject_volcano_group_name(pod)

    def watch(self, lws_controller: Controller, pod_controller: Controller) -> None:
        # With spec.scheduling the PodGroups belong to the LWS, else to the leader pod: a deleted one
        # is made again.
        lws_controller.watch(self._pod_groups, owner_mapper(c.LWS_KIND, c.LWS_GROUP))
        pod_controller.watch(self._pod_groups, owner_mapper("Pod", ""))

    async def _ensure(self, desired: MutableObj) -> None:
        """Create-if-absent; an existing PodGroup must be ours (never updated, as upstream)."""
        key = ObjectKey(namespace_of(desired), name_of(desired))
        owner = controller_owner(desired) or {}
        existing = self._pod_groups.store.get(key)
        if existing is None:
            try:
                await self._client.create(VOLCANO_POD_GROUPS, desired)
                log.debug("created PodGroup", pod_group=f"{key.namespace}/{key.name}")
                return
            except Exception as err:
                if is_not_found(err):
                    raise gang.SchedulingError(
                        c.REASON_API_NOT_AVAILABLE, f"create PodGroup {key.namespace}/{key.name}: {err}"
                    ) from err
                if not is_already_exists(err):
                    raise gang.SchedulingError(
                        c.REASON_POD_GROUP_CREATE_FAILED, f"create PodGroup {key.namespace}/{key.name}: {err}"
                    ) from err
            # The cache lags a PodGroup created earlier (by us or someone else): read it.
            existing = await self._client.get(VOLCANO_POD_GROUPS, key.namespace, key.name)
        gang.check_existing_pod_group(existing, owner)
