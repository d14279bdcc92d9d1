"""The LWS's own children besides the leader workload: the shared headless Service, and the worker
StatefulSets that go with their leaders when the set is deleted (podTerminationPolicy Parallel)."""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.events import error_text, lws_ref
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.shell import Shell
from leaderworkerset.core.desired.services import shared_service
from leaderworkerset.core.lifecycle.termination import worker_statefulsets_to_delete_with_lws
from leaderworkerset.core.objects import MutableObj, name_of, namespace_of, uid_of
from leaderworkerset.runtime.errors import is_already_exists
from leaderworkerset.runtime.resources import SERVICES, STATEFULSETS


class Children(Shell):
    async def ensure_shared_service(self, round_: Round) -> None:
        service = shared_service(round_.lws)
        if service is None or self.informers.has_service(round_.key.namespace, round_.key.name):
            return
        try:
            await self.client.create(SERVICES, service)
        except Exception as err:
            if is_already_exists(err):
                return
            note = c.MSG_FAILED_CREATE_HEADLESS_SERVICE.replace("%v", "%s") % error_text(err)
            self.recorder.warning(lws_ref(round_.lws), c.EVENT_FAILED_CREATE, c.EVENT_ACTION_CREATE, note)
            raise

    async def delete_workers_in_parallel(self, lws: MutableObj) -> None:
        """podTerminationPolicy Parallel: the workers go together with their leaders."""
        statefulsets = self.informers.set_statefulsets(namespace_of(lws), name_of(lws))
        for sts in worker_statefulsets_to_delete_with_lws(lws, statefulsets):
            await self.client.delete_incarnation(STATEFULSETS, namespace_of(sts), name_of(sts), uid_of(sts))
