"""spec.scheduling on a manager without a scheduler provider: reported, not ignored."""

from __future__ import annotations

import pytest
from lightkube import AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, STATEFULSETS
from tests.integration.scheduling.conftest import provider_manager
from tests.support import clusters, expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]


async def test_scheduling_without_a_provider_fails_the_condition_before_any_statefulset(
    gang_cluster: LocalCluster, gang_api: KubeClient, gang_kube: AsyncClient, request: pytest.FixtureRequest
) -> None:
    ns = await clusters.fresh_namespace(gang_kube, request)
    async with provider_manager(gang_cluster, None, ns):
        # A plain LWS next to it is reconciled as usual: the positive sign the controller runs.
        await gang_api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, "plain").replicas(1).obj())
        await gang_api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns).replicas(1).scheduling({}).obj())
        await expect.expect_valid_leader_statefulset(gang_api, ns, 1, name="plain")
        message = "spec.scheduling requires a configured scheduler provider"
        await expect.expect_event(
            gang_api, ns, c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, message, type_="Warning"
        )

        async def condition() -> bool:
            found = {
                x["type"]: x
                for x in (await kubelet.get_lws(gang_api, ns)).get("status", {}).get("conditions") or []
            }
            got = found.get(c.CONDITION_WORKLOAD_SCHEDULING_CREATED, {})
            assert (got.get("status"), got.get("reason"), got.get("message")) == (
                c.CONDITION_FALSE,
                c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY,
                message,
            ), got
            return True

        await eventually(condition)
        assert [s["metadata"]["name"] for s in await gang_api.list(STATEFULSETS, ns)] == ["plain"]
        plain = await kubelet.get_lws(gang_api, ns, "plain")
        types = [x["type"] for x in plain.get("status", {}).get("conditions") or []]
        assert c.CONDITION_WORKLOAD_SCHEDULING_CREATED not in types  # absent without spec.scheduling
