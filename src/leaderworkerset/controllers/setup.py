"""Registration of the LeaderWorkerSet controllers on a runtime Manager (called by `lws manager`)."""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.controllers import group, leaderworkerset
from leaderworkerset.controllers.informers import SharedInformers, shared_informers
from leaderworkerset.controllers.leaderworkerset import Now
from leaderworkerset.controllers.scheduling import SchedulerProvider, new_provider
from leaderworkerset.runtime.controller import Controller
from leaderworkerset.runtime.manager import Manager


@dataclass(frozen=True)
class RegisteredControllers:
    leaderworkerset: Controller
    pod: Controller
    informers: SharedInformers
    provider: SchedulerProvider | None = None


def register_controllers(
    manager: Manager,
    *,
    max_concurrent_reconciles: int = leaderworkerset.DEFAULT_MAX_CONCURRENT,
    now: Now | None = None,
    namespace: str | None = None,
    scheduler_provider: str | None = None,
) -> RegisteredControllers:
    """Declare the shared caches and add the LWS and pod controllers to `manager`.

    Call once per manager, before `manager.run()`. The recorder of both is `leaderworkerset`.
    `namespace` limits the controllers (and their caches) to one namespace; None watches all.
    `scheduler_provider` is the Configuration's gangSchedulingManagement.schedulerProvider.
    """
    informers = shared_informers(manager.cache, namespace)
    provider = new_provider(scheduler_provider, manager, informers, namespace)
    lws_controller = leaderworkerset.setup(
        manager, informers, max_concurrent=max_concurrent_reconciles, now=now, provider=provider
    )
    pod_controller = group.setup(
        manager, informers, max_concurrent=max_concurrent_reconciles, provider=provider
    )
    if provider is not None:
        provider.watch(lws_controller, pod_controller)
    return RegisteredControllers(lws_controller, pod_controller, informers, provider)
