"""Registration of the controllers on a runtime Manager (called by `lws manager`)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from leaderworkerset.controllers import disaggregatedset, disruptionbudget, group
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers
from leaderworkerset.controllers.informers import SharedInformers, shared_informers
from leaderworkerset.controllers.leaderworkerset import setup as lws_setup
from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.scheduling import SchedulerProvider, new_provider
from leaderworkerset.runtime.controller import Controller
from leaderworkerset.runtime.manager import Manager


@dataclass(frozen=True)
class RegisteredControllers:
    leaderworkerset: Controller | None
    pod: Controller | None
    informers: SharedInformers | None
    provider: SchedulerProvider | None = None
    disaggregatedset: Controller | None = None
    ds_informers: DisaggregatedSetInformers | None = None
    registry: CollectorRegistry | None = None  # the manager's metrics (tests read the group metrics)
    restart_support: InPlaceRestartSupport | None = None  # what the in-place restart needs (CLI-wired)


def register_controllers(
    manager: Manager,
    *,
    max_concurrent_reconciles: int = lws_setup.DEFAULT_MAX_CONCURRENT,
    namespace: str | None = None,
    scheduler_provider: str | None = None,
    enable_leaderworkerset: bool = True,
    enable_disaggregatedset: bool = True,
    failure_ledger: bool = True,
    restart_support: InPlaceRestartSupport | None = None,
) -> RegisteredControllers:
    """Declare the caches and add the LWS and pod controllers (recorder `leaderworkerset`) and the
    DisaggregatedSet controller (recorder `disaggregatedset`) to `manager`.

    Call once per manager, before `manager.run()`. `namespace` limits the controllers (and their
    caches) to one namespace; None watches all. `scheduler_provider` is the Configuration's
    gangSchedulingManagement.schedulerProvider. Upstream always runs all three controllers; the
    switches let a manager (or a test) run one side without the other's caches.
    `failure_ledger=False` keeps no per-LWS failure history (controllers/group/ledger.py).
    `restart_support`: what this manager knows of the in-place restart's prerequisites (None: the
    LWS controller flags none).
    Every controller reads its time from the manager's clock (runtime/clock.py).
    """
    informers = lws_controller = pod_controller = provider = None
    if enable_leaderworkerset:
        informers = shared_informers(manager.cache, namespace)
        provider = new_provider(scheduler_provider, manager, informers, namespace)
        lws_controller = lws_setup.setup(
            manager,
            informers,
            max_concurrent=max_concurrent_reconciles,
            provider=provider,
            restart_support=restart_support,
        )
        pod_controller = group.setup(
            manager,
            informers,
            max_concurrent=max_concurrent_reconciles,
            provider=provider,
            failure_ledger=failure_ledger,
        )
        if provider is not None:
            provider.watch(lws_controller, pod_controller)
        disruptionbudget.setup(manager, informers, namespace=namespace)
    ds_controller = ds_caches = None
    if enable_disaggregatedset:
        ds_controller, ds_caches = disaggregatedset.setup(
            manager, namespace=namespace, max_concurrent=max_concurrent_reconciles
        )
    return RegisteredControllers(
        lws_controller,
        pod_controller,
        informers,
        provider,
        ds_controller,
        ds_caches,
        manager.registry,
        restart_support,
    )
