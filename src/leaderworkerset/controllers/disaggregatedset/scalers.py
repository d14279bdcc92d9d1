"""Role scalers of External roles: create, seed, delete, write status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.disaggregatedset.informers import DisaggregatedSetInformers
from leaderworkerset.core.disaggregated.naming import scaler_name
from leaderworkerset.core.disaggregated.scalers import (
    adoption_patch,
    build_scaler,
    is_left_by_earlier_set,
    observed_replicas,
    plan_scalers,
    scaler_status,
)
from leaderworkerset.core.objects import Obj, is_controlled_by, labels_of, name_of, namespace_of, uid_of
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_already_exists, is_conflict, is_not_found
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, DS_ROLE_SCALERS

log = structlog.get_logger(__name__)


def ds_ref(ds: Obj) -> object:
    return object_ref(ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)


class Scalers:
    def __init__(
        self, client: KubeClient, informers: DisaggregatedSetInformers, recorder: EventRecorder
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder

    async def reconcile(self, ds: Obj, children: Sequence[Obj]) -> dict[str, Obj]:
        """Ensure one scaler per External role; returns role → bound scaler (unresolved roles absent)."""
        cached = self._informers.set_scalers(namespace_of(ds), name_of(ds))
        plan = plan_scalers(ds, cached, children)
        ref = object_ref(ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)
        for scaler in plan.delete:
            try:
                await self._client.delete(DS_ROLE_SCALERS, namespace_of(scaler), name_of(scaler))
            except Exception as err:
                if not is_not_found(err):
                    raise
            role = labels_of(scaler).get(c.LABEL_DS_ROLE, "")
            note = c.MSG_SCALER_DELETED % (name_of(scaler), role)
            self._recorder.normal(ref, c.EVENT_SCALER_DELETED, c.EVENT_ACTION_DELETE, note)
        bound = dict(plan.bound)
        for role, leftover in plan.adopt:
            adopted = await self._adopt(ds, role, leftover)
            if adopted is not None:
                bound[role] = adopted
        for role, seed in plan.create:
            created = await self._create_scaler(ds, role, seed)
            if created is not None:
                bound[role] = created
        return bound

    async def _create_scaler(self, ds: Obj, role: str, seed: int) -> Obj | None:
        ref = object_ref(ds, api_version=c.DS_API_VERSION, kind=c.DS_KIND)
        name = scaler_name(name_of(ds), role)
        try:
            created = await self._client.create(DS_ROLE_SCALERS, build_scaler(ds, role, seed))
        except Exception as err:
            if not is_already_exists(err):
                raise
            current = await self._client.get(DS_ROLE_SCALERS, namespace_of(ds), name)
            if is_controlled_by(current, ds):
                return current
            if is_left_by_earlier_set(current, ds):
                return await self._adopt(ds, role, current)
            note = c.MSG_SCALER_CONFLICT % name
            self._recorder.warning(ref, c.EVENT_SCALER_CONFLICT, c.EVENT_ACTION_CONFLICT, note)
            return None
        self._recorder.normal(
            ref, c.EVENT_SCALER_CREATED, c.EVENT_ACTION_CREATE, c.MSG_SCALER_CREATED % (name, role)
        )
        return created

    async def _adopt(self, ds: Obj, role: str, scaler: Obj) -> Obj | None:
        """Take over a scaler left by a deleted DS of this name, keeping its `spec.replicas`; None
        (the role stays unresolved, retried next round) when the cached DS is not the live one or
        the scaler changed or went away meanwhile."""
        live = await self._client.get_or_none(DISAGGREGATEDSETS, namespace_of(ds), name_of(ds))
        if live is None or uid_of(live) != uid_of(ds):
            return None
        try:
            adopted = await self._client.merge_patch(
                DS_ROLE_SCALERS, namespace_of(scaler), name_of(scaler), adoption_patch(ds, role, scaler)
            )
        except Exception as err:
            if is_conflict(err) or is_not_found(err):
                return None
            raise
        log.info("adopted scaler left by a deleted DisaggregatedSet of the same name", scaler=name_of(scaler))
        return adopted

    async def write_status(
        self, ds: Obj, bound: dict[str, Obj], children: Sequence[Obj], now: datetime
    ) -> None:
        for role, scaler in bound.items():
            status = scaler_status(name_of(ds), role, scaler, observed_replicas(role, children), now)
            if status is not None:
                await self._client.patch_status(
                    DS_ROLE_SCALERS, namespace_of(scaler), name_of(scaler), {"status": status}
                )
