"""The manager as users run it: from its image, installed by its chart, two replicas electing a leader,
webhooks reached through `lws-webhook-service`; a forced rotation of the serving certificate; a rolling
update that keeps `maxUnavailable`'s capacity with real readiness; an uninstall that leaves every group
running, picked up again by a reinstall with no pod restarted; and the same swap with upstream's own
image and chart."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS, LEASES, PODS
from leaderworkerset.webhooks import certs
from tests.support import realnodes
from tests.support.cli import lws_ok
from tests.support.objects import is_ready, labels
from tests.support.realnodes import NAMESPACE, PROBE_V2, lws_available, probe_lws
from tests.support.tlsprobe import serves
from tests.support.unchanged import expect_quiet_takeover, settled
from tests.support.wait import LONG_TIMEOUT, eventually

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]


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


@dataclass
class Admissions:
    """LeaderWorkerSet creates through the webhooks, two in flight, until `stop`; those started after
    `mark` are counted apart (they are the ones the rotation must not break)."""

    api: KubeClient
    ns: str
    failures: list[str] = field(default_factory=list)
    done: int = 0
    done_after_mark: int = 0
    _next: int = 0
    _marked: bool = False
    _stopping: bool = False

    async def worker(self) -> None:
        while not self._stopping:
            index, marked = self._next, self._marked
            self._next += 1
            try:
                created = await self.api.create(
                    LEADERWORKERSETS, probe_lws(self.ns, f"rotate-{index}", replicas=0, size=2)
                )
                if created["spec"].get("startupPolicy") != c.STARTUP_POLICY_LEADER_CREATED:
                    self.failures.append(f"rotate-{index}: not defaulted")
            except ApiStatusError as err:
                self.failures.append(f"rotate-{index}: {err.status.message}")
            self.done += 1
            self.done_after_mark += marked

    def mark(self) -> None:
        self._marked = True

    def stop(self) -> None:
        self._stopping = True


async def two_ready_managers(api: KubeClient) -> list[str]:
    """The pod addresses of both manager replicas once both are Ready, else an empty list."""
    pods = await api.list(PODS, NAMESPACE, label_selector="control-plane=controller-manager")
    ips = [p["status"]["podIP"] for p in pods if is_ready(p) and not p["metadata"].get("deletionTimestamp")]
    return ips if len(ips) == 2 else []


async def test_deleting_the_webhook_secret_rotates_the_certificate_with_no_failed_admission(
    real_api: KubeClient, real_ns: str
) -> None:
    """`kubectl delete secret lws-webhook-server-cert` (docs/webhooks.md): both replicas serve a new
    CA's certificate within seconds, and no admission fails on the way."""
    secret = await real_api.get(certs.SECRETS, NAMESPACE, c.DEFAULT_WEBHOOK_SECRET_NAME)
    first = certs.CertArtifacts.from_secret_data(secret.get("data"))
    assert first is not None
    service = f"{c.DEFAULT_WEBHOOK_SERVICE_NAME}.{NAMESPACE}.svc"
    # Both replicas Ready (an earlier test may have frozen a node and let it come back).
    ips = await eventually(lambda: two_ready_managers(real_api), timeout=LONG_TIMEOUT)
    load = Admissions(real_api, real_ns)
    workers = asyncio.gather(load.worker(), load.worker())
    try:
        await eventually(lambda: load.done >= 10, timeout=LONG_TIMEOUT, message="admissions did not start")
        await real_api.delete(certs.SECRETS, NAMESPACE, c.DEFAULT_WEBHOOK_SECRET_NAME)

        async def rotated() -> certs.CertArtifacts | None:
            current = await real_api.get_or_none(certs.SECRETS, NAMESPACE, c.DEFAULT_WEBHOOK_SECRET_NAME)
            artifacts = certs.CertArtifacts.from_secret_data((current or {}).get("data"))
            return artifacts if artifacts is not None and artifacts.ca_cert != first.ca_cert else None

        renewed = await eventually(rotated, timeout=LONG_TIMEOUT, message="the Secret was not recreated")

        async def both_serve_it() -> bool:
            answers = [
                await serves(ip, c.DEFAULT_WEBHOOK_PORT, renewed.cert, renewed.ca_cert, service) for ip in ips
            ]
            return all(answers)

        await eventually(both_serve_it, timeout=LONG_TIMEOUT, message="a replica serves the old certificate")
        load.mark()
        await eventually(lambda: load.done_after_mark >= 20, timeout=LONG_TIMEOUT)
    finally:
        load.stop()
        await workers
    assert load.failures == []


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


async def test_upstreams_image_and_chart_take_over_and_hand_back_with_no_pod_restarted(
    installed: LocalCluster, real_api: KubeClient, real_ns: str
) -> None:
    """The swap as a user does it on a real cluster: our chart out, upstream's v0.9.0 chart in with
    upstream's image (built here from its module), then back; no group pod restarts at any step."""
    await real_api.create(LEADERWORKERSETS, probe_lws(real_ns, "swapped", replicas=2, size=2))
    await eventually(lambda: lws_available(real_api, real_ns, "swapped"), timeout=LONG_TIMEOUT)
    before = await settled(real_api, real_ns)

    realnodes.helm(installed, "uninstall", realnodes.RELEASE, f"--namespace={NAMESPACE}", "--wait")
    await expect_groups_unchanged(real_api, real_ns, before)
    realnodes.upstream_helm_install(installed)
    await eventually(
        lambda: realnodes.manager_available(real_api, replicas=1, image=realnodes.UPSTREAM_IMAGE),
        timeout=LONG_TIMEOUT * 2,
        message="upstream's manager Available from its image",
    )
    await eventually(lambda: realnodes.admits(real_api, real_ns), timeout=LONG_TIMEOUT)
    await expect_quiet_takeover(
        real_api, real_ns, before, "upstream-a", probe_lws(real_ns, "upstream-a", replicas=1, size=2)
    )

    realnodes.helm(installed, "uninstall", realnodes.RELEASE, f"--namespace={NAMESPACE}", "--wait")
    await expect_groups_unchanged(real_api, real_ns, before)
    realnodes.helm_install(installed)
    await eventually(lambda: realnodes.manager_available(real_api), timeout=LONG_TIMEOUT * 2)
    await expect_quiet_takeover(
        real_api, real_ns, before, "ours-again", probe_lws(real_ns, "ours-again", replicas=1, size=2)
    )


async def expect_groups_unchanged(api: KubeClient, ns: str, before: dict[str, object]) -> None:
    """With no manager at all, the groups run on: same pods, no restart, every leader still Ready
    (its workers still connected)."""
    now = await settled(api, ns)
    assert now == before
    leaders = [p for p in await api.list(PODS, ns) if labels(p).get(c.LABEL_WORKER_INDEX) == "0"]
    assert leaders
    assert all(is_ready(p) for p in leaders)
