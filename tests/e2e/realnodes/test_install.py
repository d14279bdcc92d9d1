"""The manager as users run it: from its image, installed by its chart, two replicas electing a leader,
webhooks reached through `lws-webhook-service`; a rolling update that keeps `maxUnavailable`'s
capacity with real readiness; and an uninstall that leaves every group running, picked up again by a
reinstall with no pod restarted."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, LEASES, PODS
from tests.support import realnodes
from tests.support.cli import lws_ok
from tests.support.objects import is_ready, labels
from tests.support.realnodes import NAMESPACE, PROBE_V2, lws_available, probe_lws
from tests.support.unchanged import expect_quiet_takeover, settled
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]


async def leader_pod(api: KubeClient) -> str:
    lease = await api.get(LEASES, NAMESPACE, c.DEFAULT_LEADER_ELECTION_ID)
    holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
    return holder.split("_")[0]


async def test_deleting_the_leading_manager_pod_hands_over_with_no_failed_admission(
    real_api: KubeClient, real_ns: str
) -> None:
    leading = await leader_pod(real_api)
    assert leading.startswith("lws-controller-manager-"), leading
    await real_api.delete(PODS, NAMESPACE, leading)

    async def taken_over() -> bool:
        return (await leader_pod(real_api)) not in ("", leading)

    await eventually(taken_over, timeout=LONG_TIMEOUT)
    # Every admission after the takeover goes through: creates defaulted by the mutating webhook and
    # validated by the validating one, served by whichever replica the Service picks.
    for index in range(20):
        created = await real_api.create(
            LEADERWORKERSETS, probe_lws(real_ns, f"admit-{index}", replicas=0, size=2)
        )
        assert created["spec"]["startupPolicy"] == c.STARTUP_POLICY_LEADER_CREATED
    # And the new leader's controllers act: a group comes up on the real nodes.
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "after", replicas=1, size=2))
    await eventually(lambda: lws_available(real_api, real_ns, "after"), timeout=LONG_TIMEOUT)
    await eventually(lambda: realnodes.manager_available(real_api), timeout=LONG_TIMEOUT)


async def test_a_rolling_update_of_the_image_keeps_max_unavailable_capacity(
    real_api: KubeClient, real_ns: str
) -> None:
    lws = probe_lws(real_ns, "roll", replicas=3, size=2)
    await real_api.create(LEADERWORKERSETS, lws)
    await eventually(lambda: lws_available(real_api, real_ns, "roll"), timeout=LONG_TIMEOUT)

    current = await real_api.get(LEADERWORKERSETS, real_ns, "roll")
    for template in ("leaderTemplate", "workerTemplate"):
        current["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]["image"] = PROBE_V2
    await real_api.update(LEADERWORKERSETS, current)

    ready_seen: list[int] = []

    async def rolled() -> bool:
        status = (await real_api.get(LEADERWORKERSETS, real_ns, "roll")).get("status") or {}
        ready_seen.append(int(status.get("readyReplicas") or 0))
        pods = await real_api.list(PODS, real_ns, label_selector=f"{c.LABEL_SET_NAME}=roll")
        images = {p["spec"]["containers"][0]["image"] for p in pods}
        return images == {PROBE_V2} and len(pods) == 6 and ready_seen[-1] == 3

    await eventually(rolled, timeout=LONG_TIMEOUT * 2, interval=0.2)
    assert min(ready_seen) >= 2, f"ready groups seen during the rollout: {ready_seen}"
    assert min(ready_seen) < 3, "the rollout never took a group down: nothing was observed rolling"


async def test_uninstall_leaves_every_group_running_and_a_reinstall_restarts_no_pod(
    installed: LocalCluster, real_api: KubeClient, real_ns: str
) -> None:
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "kept", replicas=2, size=2))
    await eventually(lambda: lws_available(real_api, real_ns, "kept"), timeout=LONG_TIMEOUT)
    before = await settled(real_api, real_ns)

    # helm's uninstall keeps the CRDs (so the sets and their groups); our CLI installs in its place.
    realnodes.helm(installed, "uninstall", realnodes.RELEASE, f"--namespace={NAMESPACE}", "--wait")
    await expect_groups_unchanged(real_api, real_ns, before)
    await lws_ok(installed, "install", "--image", realnodes.MANAGER_IMAGE)
    await expect_quiet_takeover(
        real_api, real_ns, before, "probe-a", probe_lws(real_ns, "probe-a", replicas=1, size=2)
    )

    # And back: `lws uninstall` keeps the CRDs too; the chart takes over again.
    await lws_ok(installed, "uninstall")
    await expect_groups_unchanged(real_api, real_ns, before)
    realnodes.helm_install(installed)
    await eventually(lambda: realnodes.manager_available(real_api), timeout=LONG_TIMEOUT)
    await expect_quiet_takeover(
        real_api, real_ns, before, "probe-b", probe_lws(real_ns, "probe-b", replicas=1, size=2)
    )


async def expect_groups_unchanged(api: KubeClient, ns: str, before: dict[str, object]) -> None:
    """With no manager at all, the groups run on: same pods, no restart, every leader still Ready
    (its workers still connected)."""
    now = await settled(api, ns)
    assert now == before
    leaders = [p for p in await api.list(PODS, ns) if labels(p).get(c.LABEL_WORKER_INDEX) == "0"]
    assert leaders
    assert all(is_ready(p) for p in leaders)
