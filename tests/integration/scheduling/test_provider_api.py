"""The manager refuses to start a provider whose API the cluster does not serve (naming the setting)."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.scheduling import ProviderApiMissingError, require_provider_api
from leaderworkerset.runtime.client import KubeClient

pytestmark = [pytest.mark.cluster]


@pytest.mark.parametrize("provider", [c.SCHEDULER_PROVIDER_KUBERNETES, c.SCHEDULER_PROVIDER_VOLCANO, None])
async def test_served_provider_apis_pass(gang_api: KubeClient, provider: str | None) -> None:
    await require_provider_api(gang_api, provider)


async def test_an_unserved_api_is_named_with_the_server_version_and_its_remedy(gang_api: KubeClient) -> None:
    assert (await gang_api.server_version()).startswith("v1.")
    unserved = {c.SCHEDULER_PROVIDER_KUBERNETES: ("scheduling.k8s.io/v1alpha9", "workloads", "turn it on")}
    want = (
        "gangSchedulingManagement.schedulerProvider 'kubernetes' needs the API server to serve "
        "workloads.scheduling.k8s.io (scheduling.k8s.io/v1alpha9), which it does not "
        f"(Kubernetes {await gang_api.server_version()}): turn it on"
    )
    with pytest.raises(ProviderApiMissingError) as raised:
        await require_provider_api(gang_api, c.SCHEDULER_PROVIDER_KUBERNETES, unserved)
    assert str(raised.value) == want
