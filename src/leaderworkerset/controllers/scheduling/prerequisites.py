"""Step A12 of the LWS reconcile: scheduling prerequisites before the leader workload.

With `spec.scheduling` set, the provider's `reconcile_scheduling` runs and the outcome lands in
the `WorkloadSchedulingCreated` condition (written only when it changes); a failure also records
a Warning event named after the reason and is raised again so the key is retried with backoff,
before any leader StatefulSet exists. Without `spec.scheduling` nothing happens.
"""

from __future__ import annotations

from datetime import datetime

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import Obj
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core import gang
from leaderworkerset.core.status import format_time
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder, object_ref
from leaderworkerset.runtime.resources import LEADERWORKERSETS


async def reconcile_prerequisites(
    provider: SchedulerProvider | None,
    client: KubeClient,
    recorder: EventRecorder,
    lws: Obj,
    *,
    replicas: int,
    revision: str,
    clock: Clock,
) -> Obj:
    """Return the LWS to continue with (the status write moves its resourceVersion on)."""
    if (lws.get("spec") or {}).get("scheduling") is None:
        return lws
    now = clock.wall()  # the condition's transition time is when the provider was asked
    if provider is None:
        failure = gang.SchedulingError(c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, gang.MESSAGE_NO_PROVIDER)
    else:
        try:
            await provider.reconcile_scheduling(lws, replicas, revision)
            failure = None
        except gang.SchedulingError as err:
            failure = err
    if failure is None:
        return await _write(
            client,
            lws,
            c.CONDITION_TRUE,
            c.REASON_SCHEDULING_PREREQUISITES_CREATED,
            gang.MESSAGE_SCHEDULING_PREREQUISITES_CREATED,
            now,
        )
    ref = object_ref(lws, api_version=c.LWS_API_VERSION, kind=c.LWS_KIND)
    recorder.warning(ref, failure.reason, c.EVENT_ACTION_CREATE, str(failure))
    await _write(client, lws, c.CONDITION_FALSE, failure.reason, str(failure), now)
    raise failure


async def _write(client: KubeClient, lws: Obj, status: str, reason: str, message: str, now: datetime) -> Obj:
    conditions = gang.scheduling_conditions(lws, status, reason, message, format_time(now))
    if conditions is None:
        return lws
    body = {
        **lws,
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "status": {**(lws.get("status") or {}), "conditions": conditions},
    }
    return await client.update(LEADERWORKERSETS, body, "status")
