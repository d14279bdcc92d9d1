"""Private per-revision Services of one slice."""

from __future__ import annotations

from collections.abc import Sequence

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.children import AdoptionRefusedError
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers
from leaderworkerset.core.disaggregated.services import (
    ServiceVerdict,
    judge_existing,
    legacy_services,
    wanted_services,
)
from leaderworkerset.core.objects import Obj, lws_owner_reference, name_of, namespace_of
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_already_exists, is_not_found
from leaderworkerset.runtime.resources import SERVICES


class Services:
    def __init__(self, client: KubeClient, informers: DisaggregatedSetInformers) -> None:
        self._client = client
        self._informers = informers

    async def reconcile_slice(self, ds: Obj, roles: Sequence[str], target: Sequence[Obj]) -> None:
        """Create the slice's target-revision Services once all its roles serve; never update them."""
        by_name = {name_of(lws): lws for lws in target}
        for service in wanted_services(roles, target):
            existing: Obj | None = self._informers.service(namespace_of(service), name_of(service))
            if existing is None:
                existing = await self._create_service(service)
            if existing is not None:
                await self._settle(existing, judge_existing(existing, ds, by_name))

    async def migrate_legacy(self, ds: Obj, children: Sequence[Obj]) -> None:
        """Hand DS-owned Services of an older controller to their LWS; delete orphaned ones."""
        by_name = {name_of(lws): lws for lws in children}
        cached = self._informers.set_services(namespace_of(ds), name_of(ds))
        for service, verdict in legacy_services(ds, cached, by_name):
            await self._settle(service, verdict)

    async def _create_service(self, service: Obj) -> Obj | None:
        """None when created; the existing Service when the name was taken (None if it vanished)."""
        try:
            await self._client.create(SERVICES, service)
            return None
        except Exception as err:
            if not is_already_exists(err):
                raise
        try:
            return await self._client.get(SERVICES, namespace_of(service), name_of(service))
        except Exception as err:
            if is_not_found(err):
                return None  # deleted since: the next reconcile recreates it
            raise

    async def _settle(self, service: Obj, verdict: ServiceVerdict) -> None:
        namespace, name = namespace_of(service), name_of(service)
        try:
            if verdict.kind == "migrate" and verdict.lws is not None:
                patch = {"metadata": {"ownerReferences": [lws_owner_reference(verdict.lws)]}}
                await self._client.merge_patch(SERVICES, namespace, name, patch)
            elif verdict.kind == "delete":
                await self._client.delete(SERVICES, namespace, name)
        except Exception as err:
            if not is_not_found(err):
                raise
        if verdict.kind == "conflict":
            lws = "" if verdict.lws is None else name_of(verdict.lws)
            raise AdoptionRefusedError(c.MSG_SERVICE_NOT_CONTROLLED % (name, lws))
