"""Gang-scheduling providers (docs/gang-scheduling.md): one module per provider behind
`SchedulerProvider`: `volcano` (Volcano PodGroups) and `kubernetes` (the Workload API);
`prerequisites` is the LWS reconcile's step that makes them before the leader workload.

The Configuration's `gangSchedulingManagement.schedulerProvider` picks the provider, as upstream's
`NewSchedulerProvider` does; without that block there is none. Callers:

* the LWS controller calls `reconcile_scheduling` before it applies the leader StatefulSet, so
  PodGroups exist before any group pod can be scheduled (`status.step` does the condition/event);
* the pod controller calls `create_pod_group_if_not_exists` for every leader;
* the pod webhook uses `inject_pod_group_metadata`; the webhooks layer cannot import controllers, so
  both sides call the same pure function in `core` (`core.scheduling.gang` / `core.scheduling.workloads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.controller import Controller
from leaderworkerset.runtime.manager import Manager

__all__ = [
    "ProviderApiMissingError",
    "SchedulerProvider",
    "new_provider",
    "require_provider_api",
    "unsupported_provider_message",
]

# What each provider reads and writes, and how to get it served.
_PROVIDER_APIS = {
    c.SCHEDULER_PROVIDER_VOLCANO: (
        "scheduling.volcano.sh/v1beta1",
        "podgroups",
        "install Volcano (its CRDs)",
    ),
    c.SCHEDULER_PROVIDER_KUBERNETES: (
        "scheduling.k8s.io/v1beta1",
        "workloads",
        "it is served from Kubernetes 1.37 on (1.35 and 1.36 serve other shapes of the Workload API, "
        "which LeaderWorkerSet does not use): turn on the GenericWorkload feature gate (apiserver, "
        "controller-manager, scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true; locally: "
        "lws cluster up --workload-api",
    ),
}


class ProviderApiMissingError(RuntimeError):
    """The configured provider's API is not served: its caches could never sync."""


class SchedulerProvider(Protocol):
    name: str

    async def reconcile_scheduling(self, lws: MutableObj, replicas: int, revision: str) -> None:
        """Create/update the objects `spec.scheduling` needs; raise core.scheduling.gang.SchedulingError."""

    async def create_pod_group_if_not_exists(self, lws: MutableObj, leader: MutableObj) -> None:
        """Make sure the leader's group has its PodGroup(s); raise core.scheduling.gang.SchedulingError."""

    def inject_pod_group_metadata(self, pod: MutableObj) -> None:
        """Stamp the pod with the PodGroup it belongs to (in place)."""

    def watch(self, lws_controller: Controller, pod_controller: Controller) -> None:
        """Wake the owner's controller when one of its scheduling objects changes or goes away."""


async def require_provider_api(
    client: KubeClient, name: str | None, apis: Mapping[str, tuple[str, str, str]] | None = None
) -> None:
    """Fail fast, naming the setting, instead of waiting forever on caches of an unserved kind.

    `apis` (provider -> group/version, resource, remedy) defaults to what the providers use.
    """
    apis = _PROVIDER_APIS if apis is None else apis
    if not name or name not in apis:
        return
    group_version, plural, remedy = apis[name]
    if not await client.serves(group_version, plural):
        version = await client.server_version()
        raise ProviderApiMissingError(
            f"gangSchedulingManagement.schedulerProvider {name!r} needs the API server to serve "
            f"{plural}.{group_version.split('/')[0]} ({group_version}), which it does not "
            f"(Kubernetes {version}): {remedy}"
        )


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
