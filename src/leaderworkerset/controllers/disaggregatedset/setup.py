"""Wiring of the DisaggregatedSet controller: its caches, watches and reconciler."""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers, ds_informers
from leaderworkerset.controllers.disaggregatedset.reconciler import DisaggregatedSetReconciler
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.controller import Controller, label_mapper, own_key, owner_mapper
from leaderworkerset.runtime.manager import Manager
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, DS_ROLE_SCALERS

CONTROLLER_NAME = "disaggregatedset"


class DisaggregatedSetApiMissingError(RuntimeError):
    """The DisaggregatedSet CRDs are not served: the controller's caches could never sync."""


async def require_ds_api(client: KubeClient) -> None:
    """Fail fast, naming the remedy, instead of every controller waiting on caches that never sync."""
    for ref in (DISAGGREGATEDSETS, DS_ROLE_SCALERS):
        if not await client.serves(ref.api_version, ref.plural):
            raise DisaggregatedSetApiMissingError(
                f"the API server does not serve {ref.plural}.{ref.group} ({ref.api_version}): install the "
                "CRDs (lws install --crds-only) or run the manager with --disable-disaggregatedset"
            )


DEFAULT_MAX_CONCURRENT = 4


def setup(
    manager: Manager,
    *,
    namespace: str | None = None,
    max_concurrent: int = DEFAULT_MAX_CONCURRENT,
) -> tuple[Controller, DisaggregatedSetInformers]:
    """Declare the DS caches, create the controller with upstream's watches and add it."""
    informers = ds_informers(manager.cache, namespace)
    reconciler = DisaggregatedSetReconciler(
        manager.client, informers, manager.event_recorder(c.EVENT_COMPONENT_DS), clock=manager.clock
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler.reconcile, max_concurrent=max_concurrent, metrics=manager.metrics
    )
    controller.watch(informers.sets, own_key)  # For(DisaggregatedSet)
    controller.watch(informers.children, owner_mapper(c.DS_KIND, c.DS_GROUP))  # Owns(LeaderWorkerSet)
    controller.watch(informers.scalers, owner_mapper(c.DS_KIND, c.DS_GROUP))  # Owns(RoleScaler)
    # Private Services are owned by the child LWS; their DS label names the set to look at.
    controller.watch(informers.services, label_mapper(c.LABEL_DS_NAME))
    manager.add_controller(controller)
    return controller, informers
