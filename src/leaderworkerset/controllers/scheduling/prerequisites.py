"""A step of the LWS reconcile: scheduling prerequisites before the leader workload.

With `spec.scheduling` set, the provider's `reconcile_scheduling` runs and the outcome is the
`WorkloadSchedulingCreated` condition to put in the status (when it changes); a failure also records
a Warning event named after the reason and comes back for the LWS controller to raise, so the key is
retried with backoff before any leader StatefulSet exists. Without `spec.scheduling` nothing
happens. The condition is written by the LWS controller with the rest of the round's status (one
write per round), not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling import SchedulerProvider
from leaderworkerset.core.conditions import format_time
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.core.scheduling import gang
from leaderworkerset.runtime.clock import Clock
from leaderworkerset.runtime.events import EventRecorder, object_ref


@dataclass(frozen=True)
class Prerequisites:
    """The LWS conditions with WorkloadSchedulingCreated set (None: already so), and the failure
    to raise once they are in the status (None: the prerequisites exist)."""

    conditions: list[MutableObj] | None = None
    failure: gang.SchedulingError | None = None


async def reconcile_prerequisites(
    provider: SchedulerProvider | None,
    recorder: EventRecorder,
    lws: MutableObj,
    *,
    replicas: int,
    revision: str,
    clock: Clock,
) -> Prerequisites:
    if (lws.get("spec") or {}).get("scheduling") is None:
        return Prerequisites()
    now = format_time(clock.wall())  # the condition's transition time is when the provider was asked
    if provider is None:
        failure = gang.SchedulingError(c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, gang.MESSAGE_NO_PROVIDER)
    else:
        try:
            await provider.reconcile_scheduling(lws, replicas, revision)
            failure = None
        except gang.SchedulingError as err:
            failure = err
    if failure is None:
        created = gang.MESSAGE_SCHEDULING_PREREQUISITES_CREATED
        conditions = gang.scheduling_conditions(
            lws, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED, created, now
        )
        return Prerequisites(conditions)
    ref = object_ref(lws, api_version=c.LWS_API_VERSION, kind=c.LWS_KIND)
    recorder.warning(ref, failure.reason, c.EVENT_ACTION_CREATE, str(failure))
    conditions = gang.scheduling_conditions(lws, c.CONDITION_FALSE, failure.reason, str(failure), now)
    return Prerequisites(conditions, failure)
