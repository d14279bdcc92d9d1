"""The `kubernetes` provider: the Workload API (`scheduling.k8s.io/v1beta1`).

One reconcile, before the leader StatefulSet is applied:
  1. find (controller-UID cache index) or create the LWS's Workload — or, for a child LWS whose
     parent owns a Workload (`scheduling.k8s.io/group-template-name`), find the parent's by walking
     the controller-owner chain; only gang minCount and labels of an existing Workload may change;
  2. create or update (minCount, labels, Workload owner) the PodGroups of the active level;
  3. delete LWS-controlled PodGroups that are neither desired nor named by any pod's
     `spec.schedulingGroup.podGroupName`. Scale to zero keeps the Workload.
With groupIdentity Hash, step 2 makes no per-group PodGroups (the key is drawn at admission):
`create_pod_group_if_not_exists` makes them for each leader, and step 3 also keeps those of
every live leader, so a role-mode worker PodGroup survives until its workers exist.
Workloads and PodGroups are read from watch caches; a cache that lags our own create is caught
by AlreadyExists and one GET.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.objects import (
    MutableObj,
    annotations_of,
    controller_owner,
    is_deleting,
    name_of,
    namespace_of,
    uid_of,
)
from leaderworkerset.core.scheduling import podgroups
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.core.scheduling.gang import SchedulingError
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.controller import Controller, owner_mapper
from leaderworkerset.runtime.errors import is_already_exists, is_not_found
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.resources import ResourceRef
from leaderworkerset.runtime.store import CONTROLLER_UID_INDEX, index_by_controller_uid

log = structlog.get_logger(__name__)

WORKLOADS = ResourceRef("scheduling.k8s.io", "v1beta1", wl.WORKLOAD_KIND, "workloads")
POD_GROUPS = ResourceRef("scheduling.k8s.io", "v1beta1", wl.POD_GROUP_KIND, "podgroups")
# Controller-owner hops followed when looking for a parent's Workload (a chain is short in practice).
_MAX_OWNER_HOPS = 8


def _api_error(fallback: str, what: str, err: Exception) -> SchedulingError:
    """A 404 on a collection means the Workload API is not served (upstream's NoKindMatch)."""
    reason = c.REASON_API_NOT_AVAILABLE if is_not_found(err) else fallback
    return SchedulingError(reason, f"{what}: {err}")


class KubernetesProvider:
    name = c.SCHEDULER_PROVIDER_KUBERNETES

    def __init__(
        self,
        client: KubeClient,
        workloads: Informer[MutableObj],
        pod_groups: Informer[MutableObj],
        informers: SharedInformers,
    ) -> None:
        self._client = client
        self._workloads = workloads
        self._pod_groups = pod_groups
        self._informers = informers

    @classmethod
    def setup(
        cls, manager: Manager, informers: SharedInformers, namespace: str | None = None
    ) -> KubernetesProvider:
        # Workloads unfiltered: a parent's Workload (delegation) does not carry our label.
        workloads = manager.cache.informer(
            WORKLOADS,
            DictCodec(),
            namespace=namespace,
            indexers={CONTROLLER_UID_INDEX: index_by_controller_uid},
        )
        pod_groups = manager.cache.informer(
            POD_GROUPS,
            DictCodec(),
            namespace=namespace,
            label_selector=c.LABEL_SET_NAME,
            name="podgroups.scheduling.k8s.io",
        )
        return cls(manager.client, workloads, pod_groups, informers)

    # ----- the interface ---------------------------------------------------------------------------
    async def reconcile_scheduling(self, lws: MutableObj, replicas: int, revision: str) -> None:
        if (lws.get("spec") or {}).get("scheduling") is None:
            return
        workload = await self._reconcile_workload(lws)
        groups = podgroups.desired_pod_groups(lws, replicas, revision)
        await self._ensure_pod_groups(lws, workload, groups)
        pods = self._informers.set_pods(namespace_of(lws), name_of(lws))
        await self._cleanup(
            lws, {g.name for g in groups} | podgroups.live_group_pod_group_names(lws, pods), pods
        )

    async def create_pod_group_if_not_exists(self, lws: MutableObj, leader: MutableObj) -> None:
        """Hash identity only: the leader's group key is drawn at admission, so its PodGroups are
        made here, from the Workload the LWS controller already created."""
        groups = podgroups.leader_pod_groups(lws, leader)
        if not groups:
            return
        workload = await self._existing_workload(lws)
        await self._ensure_pod_groups(lws, workload, groups)

    def inject_pod_group_metadata(self, pod: MutableObj) -> None:
        wl.inject_scheduling_group(pod)

    def watch(self, lws_controller: Controller, pod_controller: Controller) -> None:
        del pod_controller  # every PodGroup here is the LWS's, Hash ones included
        lws_owner = owner_mapper(c.LWS_KIND, c.LWS_GROUP)
        lws_controller.watch(self._workloads, lws_owner)
        lws_controller.watch(self._pod_groups, lws_owner)

    # ----- the Workload ------------------------------------------------------------------------------
    def _owned_workload(self, lws: MutableObj) -> MutableObj | None:
        candidates = self._workloads.store.by_index(CONTROLLER_UID_INDEX, uid_of(lws))
        return wl.find_owned_workload([w for w in candidates if namespace_of(w) == namespace_of(lws)], lws)

    async def _existing_workload(self, lws: MutableObj) -> MutableObj:
        if annotations_of(lws).get(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME):
            return await self._delegated_workload(lws)
        workload = self._owned_workload(lws)
        if workload is None:
            raise SchedulingError(
                c.REASON_WORKLOAD_CREATE_FAILED,
                f"Workload {namespace_of(lws)}/{wl.lws_workload_name(lws)} has not been created yet",
            )
        return workload

    async def _reconcile_workload(self, lws: MutableObj) -> MutableObj:
        if annotations_of(lws).get(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME):
            return await self._delegated_workload(lws)
        desired = wl.desired_workload(lws)
        persisted = self._owned_workload(lws)
        if persisted is not None:
            if name_of(persisted) != name_of(desired):
                raise SchedulingError(
                    c.REASON_INVALID_SCHEDULING_CONFIGURATION,
                    f"owned Workload {namespace_of(persisted)}/{name_of(persisted)} does not have the "
                    f"expected UID-qualified name {name_of(desired)!r}",
                )
            return await self._update_workload(persisted, desired, lws)
        key = f"{namespace_of(desired)}/{name_of(desired)}"
        try:
            created = await self._client.create(WORKLOADS, desired)
        except Exception as err:
            if not is_already_exists(err):
                raise _api_error(c.REASON_WORKLOAD_CREATE_FAILED, f"create Workload {key}", err) from err
        else:
            # A field its gate keeps comes back missing without an error: no PodGroup without it.
            dropped = wl.dropped_by_server(desired, created)
            if dropped is not None:
                raise dropped
            return created
        existing = await self._client.get(WORKLOADS, namespace_of(desired), name_of(desired))
        if not wl.controlled_by(existing, lws):
            raise SchedulingError(
                c.REASON_WORKLOAD_CREATE_FAILED,
                f"Workload {key} already exists but is not controlled by this LeaderWorkerSet UID",
            )
        return await self._update_workload(existing, desired, lws)

    async def _update_workload(self, current: MutableObj, desired: MutableObj, lws: MutableObj) -> MutableObj:
        updated = wl.workload_update(current, desired, lws)
        if updated is None:
            return current
        try:
            return await self._client.update(WORKLOADS, updated)
        except Exception as err:
            raise SchedulingError(
                c.REASON_INVALID_SCHEDULING_CONFIGURATION,
                f"update Workload {namespace_of(current)}/{name_of(current)} gang minCount values: {err}",
            ) from err

    async def _delegated_workload(self, lws: MutableObj) -> MutableObj:
        try:
            return await self._walk_owner_chain(lws)
        except SchedulingError:
            raise
        except Exception as err:
            raise SchedulingError(c.REASON_PARENT_WORKLOAD_NOT_READY, str(err)) from err

    async def _walk_owner_chain(self, lws: MutableObj) -> MutableObj:
        namespace = namespace_of(lws)
        owner = controller_owner(lws)
        if owner is None:
            raise SchedulingError(
                c.REASON_PARENT_WORKLOAD_NOT_READY,
                f"{c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME} requires a controller owner",
            )
        for _ in range(_MAX_OWNER_HOPS):
            if not owner.get("uid"):
                raise SchedulingError(
                    c.REASON_PARENT_WORKLOAD_NOT_READY,
                    f"controller owner {owner.get('kind')} {namespace}/{owner.get('name')} has no UID",
                )
            group = str(owner.get("apiVersion") or "").rpartition("/")[0]
            matches = [
                w
                for w in self._workloads.store.by_index(CONTROLLER_UID_INDEX, str(owner["uid"]))
                if namespace_of(w) == namespace and wl.controller_ref_names(w, group, owner)
            ]
            if len(matches) > 1:
                raise SchedulingError(
                    c.REASON_PARENT_WORKLOAD_NOT_READY,
                    "multiple parent Workloads match the LWS controller-owner chain",
                )
            if matches:
                return matches[0]
            parent = await self._get_owner(namespace, owner)
            if uid_of(parent) != owner.get("uid"):
                raise SchedulingError(
                    c.REASON_PARENT_WORKLOAD_NOT_READY,
                    f"controller owner {owner.get('kind')} {namespace}/{owner.get('name')} UID changed "
                    f"from {owner.get('uid')!r} to {uid_of(parent)!r}",
                )
            owner = controller_owner(parent)
            if owner is None:
                break
        raise SchedulingError(
            c.REASON_PARENT_WORKLOAD_NOT_READY, "no parent Workload matches the LWS controller-owner chain"
        )

    async def _get_owner(self, namespace: str, owner: Mapping[str, Any]) -> MutableObj:
        """GET an owner of any kind: discovery of its group/version gives the resource name."""
        api_version = str(owner.get("apiVersion") or "")
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        resources = (await self._client.request("GET", path)).get("resources") or []
        plural = next(
            (
                r["name"]
                for r in resources
                if r.get("kind") == owner.get("kind") and "/" not in r.get("name", "")
            ),
            None,
        )
        if plural is None:
            raise SchedulingError(
                c.REASON_PARENT_WORKLOAD_NOT_READY, f"{api_version} does not serve kind {owner.get('kind')}"
            )
        group, _, version = api_version.rpartition("/")
        ref = ResourceRef(group, version, str(owner.get("kind")), plural)
        return await self._client.get(ref, namespace, str(owner.get("name")))

    # ----- PodGroups -----------------------------------------------------------------------------------
    async def _ensure_pod_groups(
        self, lws: MutableObj, workload: MutableObj, groups: list[podgroups.DesiredPodGroup]
    ) -> None:
        template = annotations_of(lws).get(c.ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME) or None
        for group in groups:
            desired = podgroups.materialize_pod_group(lws, workload, group, template)
            key = ObjectKey(namespace_of(desired), group.name)
            existing = self._pod_groups.store.get(key)
            if existing is None:
                try:
                    await self._client.create(POD_GROUPS, desired)
                    continue
                except Exception as err:
                    if not is_already_exists(err):
                        what = f"create PodGroup {key.namespace}/{key.name}"
                        raise _api_error(c.REASON_POD_GROUP_CREATE_FAILED, what, err) from err
                existing = await self._client.get(POD_GROUPS, key.namespace, key.name)
            await self._update_pod_group(existing, desired, group)

    async def _update_pod_group(
        self, existing: MutableObj, desired: MutableObj, group: podgroups.DesiredPodGroup
    ) -> None:
        key = f"{namespace_of(existing)}/{name_of(existing)}"
        if is_deleting(existing):
            raise SchedulingError(c.REASON_POD_GROUP_CLEANUP_BLOCKED, f"PodGroup {key} is still terminating")
        updated = podgroups.pod_group_update(
            existing, desired, allow_min_count_update=group.allow_min_count_update
        )
        if updated is None:
            return
        try:
            await self._client.update(POD_GROUPS, updated)
        except Exception as err:
            raise SchedulingError(
                c.REASON_INVALID_SCHEDULING_CONFIGURATION, f"update mutable PodGroup fields for {key}: {err}"
            ) from err

    async def _cleanup(self, lws: MutableObj, desired: set[str], pods: list[MutableObj]) -> None:
        namespace = namespace_of(lws)
        existing = [
            g
            for g in self._pod_groups.store.list(namespace)
            if (g.get("metadata") or {}).get("labels", {}).get(c.LABEL_SET_NAME) == name_of(lws)
        ]
        in_use = {
            name
            for pod in pods
            if (name := ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName"))
        }
        for group in podgroups.pod_groups_to_delete(lws, existing, desired, in_use):
            try:
                await self._client.delete(POD_GROUPS, namespace, name_of(group), uid=uid_of(group) or None)
            except Exception as err:
                if not is_not_found(err):
                    raise SchedulingError(
                        c.REASON_POD_GROUP_CLEANUP_BLOCKED,
                        f"delete unused PodGroup {namespace}/{name_of(group)}: {err}",
                    ) from err
