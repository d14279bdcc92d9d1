"""Hash identity: the group-replacement gate is lifted in FIFO order, and the
leader's group-ready condition mirrors its worker StatefulSet."""

from __future__ import annotations

from leaderworkerset.controllers.events import record
from leaderworkerset.controllers.informers import SharedInformers
from leaderworkerset.controllers.restartbudget import mutate_restart_counts
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.hashidentity import (
    AdmissionStep,
    admission_event,
    decide_admission,
    group_ready_status_patch,
    remove_gate_patch,
)
from leaderworkerset.core.lifecycle.restartbudget import claim_hash_count, max_group_restarts
from leaderworkerset.core.objects import MutableObj, name_of, namespace_of, revision_key_of
from leaderworkerset.runtime.client import STRATEGIC_PATCH, KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder
from leaderworkerset.runtime.resources import PODS


class HashIdentity:
    def __init__(
        self, client: KubeClient, informers: SharedInformers, recorder: EventRecorder, clock: Clock
    ) -> None:
        self._client = client
        self._informers = informers
        self._recorder = recorder
        self._clock = clock

    async def admit(self, lws: MutableObj, leader: MutableObj) -> bool:
        """Lift the group-replacement gate when its turn has come; True once the leader may schedule."""
        namespace = namespace_of(leader)
        deploy = self._informers.deployment(namespace, name_of(lws))
        desired = revision_key_of(deploy) if deploy is not None else ""
        pods = self._informers.set_pods(namespace, name_of(lws))
        admission = decide_admission(lws, leader, pods, desired)
        event = admission_event(leader, admission)
        if admission.step is AdmissionStep.ADMIT:
            if max_group_restarts(lws) is not None:
                # A replacement keeps its predecessor's budget: claim the unowned count first.
                leaders = [p for p in pods if is_leader_pod(p)]
                await mutate_restart_counts(
                    self._client,
                    namespace,
                    name_of(lws),
                    lambda counts: claim_hash_count(counts, leader, leaders),
                )
            await self._client.merge_patch(PODS, namespace, name_of(leader), remove_gate_patch(leader))
        if event is not None:
            record(self._recorder, lws, event)
        return admission.step is AdmissionStep.ADMIT

    async def sync_group_ready(self, leader: MutableObj, workers_ready: bool) -> None:
        patch = group_ready_status_patch(leader, workers_ready, self._clock.wall())
        if patch is not None:
            await self._client.patch(
                PODS,
                namespace_of(leader),
                name_of(leader),
                patch,
                patch_type=STRATEGIC_PATCH,
                subresource="status",
            )
