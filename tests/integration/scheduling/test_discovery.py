"""The webhook's view of the Workload API, asked of a real API server."""

from __future__ import annotations

import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.webhooks.discovery import WorkloadApiProbe

pytestmark = [pytest.mark.cluster]


async def test_discovery_finds_the_served_workload_api(gang_api: KubeClient) -> None:
    probe = WorkloadApiProbe()
    assert probe() is False  # nothing is assumed before the first answer
    assert await probe.refresh(gang_api) is True
    assert probe() is True


async def test_a_group_version_not_served_is_unavailable(gang_api: KubeClient) -> None:
    probe = WorkloadApiProbe("scheduling.k8s.io/v1alpha9")
    assert await probe.refresh(gang_api) is False
    assert probe() is False
