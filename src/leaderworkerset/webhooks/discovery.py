"""Whether the API server serves the Workload API, as the LWS webhook asks on admission (a
new `spec.scheduling` with the kubernetes provider needs `scheduling.k8s.io/v1beta1`
Workload). Upstream asks its RESTMapper, a cache of discovery; this is the same: the answer is
refreshed in the background and admission reads the last one, never waiting on the API server.
"""

from __future__ import annotations

import asyncio

import structlog

from leaderworkerset.runtime.client import KubeClient

log = structlog.get_logger(__name__)

WORKLOAD_GROUP_VERSION = "scheduling.k8s.io/v1beta1"
REFRESH_SECONDS = 30.0


class WorkloadApiProbe:
    """Callable for `SchedulingAdmission.workload_api_available`; False until discovery says so."""

    def __init__(self, group_version: str = WORKLOAD_GROUP_VERSION) -> None:
        self.group_version = group_version
        self.available = False

    def __call__(self) -> bool:
        return self.available

    async def refresh(self, client: KubeClient) -> bool:
        try:
            resources = (await client.request("GET", f"/apis/{self.group_version}")).get("resources") or []
        except Exception as err:  # 404: not served; anything else: keep asking, say so once per change
            found = False
            if self.available:
                log.warning("Workload API discovery failed", group_version=self.group_version, error=str(err))
        else:
            found = any(r.get("kind") == "Workload" and "/" not in str(r.get("name")) for r in resources)
        if found != self.available:
            log.info("Workload API availability changed", group_version=self.group_version, available=found)
        self.available = found
        return found

    async def run(self, client: KubeClient, interval: float = REFRESH_SECONDS) -> None:
        """Refresh until cancelled (the first answer is already in before the server starts)."""
        while True:
            await asyncio.sleep(interval)
            await self.refresh(client)
