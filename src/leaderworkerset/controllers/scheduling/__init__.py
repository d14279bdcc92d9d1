"""Gang-scheduling providers (spec §3.H): one module per provider behind `SchedulerProvider`.

The Configuration's `gangSchedulingManagement.schedulerProvider` picks the provider, as upstream's
`NewSchedulerProvider` does; without that block there is none. Callers:

* the LWS controller calls `reconcile_scheduling` before it applies the leader StatefulSet, so
  PodGroups exist before any group pod can be scheduled (`status.step` does the condition/event);
* the pod controller calls `create_pod_group_if_not_exists` for every leader;
* the pod webhook uses `inject_pod_group_metadata`; the webhooks layer cannot import controllers, so
  both sides call the same pure function in `core` (`core.gang` / `core.workloads`).
"""

from __future__ import annotations

from typing import Protocol

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import Obj, SharedInformers
from leaderworkerset.runtime.controller import Controller
from leaderworkerset.runtime.manager import Manager

__all__ = ["SchedulerProvider", "new_provider", "unsupported_provider_message"]


class SchedulerProvider(Protocol):
    name: str

    async def reconcile_scheduling(self, lws: Obj, replicas: int, revision: str) -> None:
        """Create/update the objects `spec.scheduling` needs; raise core.gang.SchedulingError."""

    async def create_pod_group_if_not_exists(self, lws: Obj, leader: Obj) -> None:
        """Make sure the leader's group has its PodGroup(s); raise core.gang.SchedulingError."""

    def inject_pod_group_metadata(self, pod: Obj) -> None:
        """Stamp the pod with the PodGroup it belongs to (in place)."""

    def watch(self, lws_controller: Controller, pod_controller: Controller) -> None:
        """Wake the owner's controller when one of its scheduling objects changes or goes away."""


def unsupported_provider_message(name: str) -> str:
    supported = "[" + " ".join(c.SCHEDULER_PROVIDERS) + "]"
    return f"unsupported scheduler provider type {name}, the supported provider list is {supported}"


def new_provider(
    name: str | None, manager: Manager, informers: SharedInformers, namespace: str | None = None
) -> SchedulerProvider | None:
    """The provider named by the Configuration (declaring its caches on the manager), or None."""
    if not name:
        return None
    if name == c.SCHEDULER_PROVIDER_VOLCANO:
        from leaderworkerset.controllers.scheduling.volcano import VolcanoProvider

        return VolcanoProvider.setup(manager, namespace)
    if name == c.SCHEDULER_PROVIDER_KUBERNETES:
        from leaderworkerset.controllers.scheduling.kubernetes import KubernetesProvider

        return KubernetesProvider.setup(manager, informers, namespace)
    raise ValueError(unsupported_provider_message(name))
