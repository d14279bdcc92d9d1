"""The nodes and the pods holding their resources, read for capacity-aware surge: shared by the LWS and
DisaggregatedSet controllers (`leaderworkerset/surgefallback.py`, `disaggregatedset/surgefallback.py`).

A direct LIST (not a cache: only sets whose surge was given back ask, at most once per poll
period), of every node and of the bound, non-terminated pods, which the scheduler counts against a
node until they are gone. None when the LIST fails (a namespace-scoped manager may not list nodes):
the caller stays on the safe side, without surge.
"""

from __future__ import annotations

import asyncio

import structlog

from leaderworkerset.core.objects import MutableObj
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import NODES, PODS

log = structlog.get_logger(__package__)

HOLDING_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


async def nodes_and_holding_pods(client: KubeClient) -> tuple[list[MutableObj], list[MutableObj]] | None:
    try:
        nodes, pods = await asyncio.gather(client.list(NODES), client.list(PODS, field_selector=HOLDING_PODS))
    except Exception as err:
        log.warning("free accelerators unknown, the surge stays given back", error=str(err))
        return None
    return nodes, pods
