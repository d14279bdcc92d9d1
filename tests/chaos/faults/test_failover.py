"""Leader failover: two `lws manager` replicas with leader election; SIGKILL the leader; the other takes
the Lease within its bounds and runs the controllers, while the webhooks keep admitting pods.

Both replicas serve webhooks (as in a cluster, where a Service spreads calls over the ready pods).
On the dev cluster the webhook configurations name one URL, so a small TCP load balancer
(`tests/support/tcpproxy.py`) listens there and forwards each connection to a replica that accepts
it; every replica is started with ``--webhook-url-port`` naming the balancer.

Measured: the takeover time (SIGKILL to the Lease held by the other replica), reported, and asserted
only against the bound the Lease gives (lease duration + one retry period, plus API latency).

What a kill may cost admission is what it costs in a cluster: the API server keeps its webhook
connections alive and does not retry a POST once it has written any of it, so each connection the
kill broke loses at most one call: the one in flight on it, or the first one the API server writes
on it before it has seen the connection close (docs/reliability.md, "Leader failover").
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS, LEASES, NAMESPACES, PODS
from tests.chaos.faults.conftest import MANAGERS, report_figures
from tests.chaos.sizes import pick
from tests.support.builders import LeaderWorkerSetBuilder, leader
from tests.support.manager import ManagerProcess
from tests.support.tcpproxy import TcpProxy
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

FAILOVERS = pick(ci=2, full=10)
ADMISSIONS = pick(ci=60, full=200)  # dry-run pod creates across each failover
# Shorter than the defaults (15/10/2 s) so that a CI run of a few failovers takes seconds.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 6.0, 4.0, 1.0
# The Lease's bound: the standby last saw the record change no later than the kill, waits out the
# duration and tries again within one retry period; API calls on a busy 2-core machine add latency.
API_LATENCY = 5.0
TAKEOVER_BOUND = LEASE_DURATION + RETRY_PERIOD + API_LATENCY


# How the API server reports a webhook call lost with its connection: the peer's close read as EOF
# (on a reused connection also "server closed idle connection"), or a write into the closed
# connection (broken pipe, reset). A rejection, a timeout or an unmutated pod is never one.
BROKEN_CONNECTION = re.compile(
    r"failed to call webhook: .*(: EOF|broken pipe|connection reset by peer|server closed idle connection)"
)


@dataclass(frozen=True)
class Failure:
    sent: float  # monotonic time the create was sent
    answered: float
    message: str
    broken_connection: bool = False  # the webhook call was lost with its connection


@dataclass
class Admissions:
    """Dry-run creates of LWS leader pods: each one goes through both pod webhooks."""

    api: KubeClient
    ns: str
    admitted: int = 0
    failed: list[Failure] = field(default_factory=list)
    kills: list[float] = field(default_factory=list)  # monotonic times of the SIGKILLs

    async def once(self) -> None:
        n = self.admitted + len(self.failed)
        body = leader(f"probe-{n}", lws_name="probe", size="2").obj()
        body["metadata"]["namespace"] = self.ns
        sent = time.monotonic()
        try:
            pod = await self.api.request(
                "POST", PODS.collection_path(self.ns), body=body, params={"dryRun": "All"}
            )
        except ApiStatusError as err:
            message = f"pod {n}: {err.code} {err}"
            broken = err.code == 500 and BROKEN_CONNECTION.search(message) is not None
            self.failed.append(Failure(sent, time.monotonic(), message, broken))
            return
        # The mutating webhook ran: it labels an ordinal leader with its group index.
        if pod["metadata"]["labels"].get(c.LABEL_GROUP_INDEX) != str(n):
            message = f"pod {n} not mutated: {pod['metadata']['labels']}"
            self.failed.append(Failure(sent, time.monotonic(), message))
            return
        self.admitted += 1

    def kill_before(self, failure: Failure) -> int | None:
        """The index of the last SIGKILL before ``failure`` was answered, if any."""
        before = [i for i, kill in enumerate(self.kills) if kill <= failure.answered]
        return before[-1] if before else None

    def lost_to_kills(self) -> tuple[list[list[Failure]], list[str]]:
        """The calls each kill lost (their connection broke), and every other failure.

        Lost: the call in flight at the kill (nothing can save it: SIGKILL drains nothing), or one
        the API server wrote after the kill on a kept-alive connection to the killed replica before
        it saw that connection close (it does not retry a POST it has written). A Service in a
        cluster loses both the same way; the balancer, which relays the close from this test's
        event loop, only widens the second window.
        """
        lost: list[list[Failure]] = [[] for _ in self.kills]
        unexplained = []
        for failure in self.failed:
            kill = self.kill_before(failure)
            if failure.broken_connection and kill is not None:
                lost[kill].append(failure)
            else:
                unexplained.append(failure.message)
        return lost, unexplained


async def holder(api: KubeClient) -> str:
    lease = await api.get_or_none(LEASES, c.DEFAULT_NAMESPACE, c.DEFAULT_LEADER_ELECTION_ID)
    return str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")


def leading(managers: list[ManagerProcess], identity: str) -> ManagerProcess:
    """The replica whose log says it became leader under ``identity``."""
    found = [m for m in managers if m.running and identity and identity in m.log_text()]
    assert len(found) == 1, (
        f"holder {identity!r} is not exactly one running replica: {[m.name for m in found]}"
    )
    return found[0]


@pytest.fixture
async def replicas(
    full_cluster: LocalCluster, chaos_api: KubeClient
) -> AsyncIterator[tuple[TcpProxy, list[ManagerProcess]]]:
    balancer = TcpProxy([])
    await balancer.start()
    lease_flags = (
        f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
        f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
        f"--leader-elect-retry-period={RETRY_PERIOD:g}s",
        f"--webhook-url-port={balancer.port}",
    )
    managers = [
        ManagerProcess(
            full_cluster, name=f"lws-manager-chaos-replica-{i}", leader_elect=True, extra_args=lease_flags
        )
        for i in range(2)
    ]
    balancer.backends = [m.webhook_port for m in managers]
    for m in managers:
        MANAGERS.append(m)
        await m.start()
    yield balancer, managers
    for m in managers:
        await m.stop()
        MANAGERS.remove(m)
    await balancer.stop()


async def test_leader_failover_within_the_lease_while_webhooks_keep_admitting(
    chaos_api: KubeClient, replicas: tuple[TcpProxy, list[ManagerProcess]]
) -> None:
    balancer, managers = replicas
    ns = f"chaos-failover-{uuid.uuid4().hex[:6]}"
    await chaos_api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    admissions = Admissions(chaos_api, ns)
    takeovers: list[float] = []
    cut_at_kill: list[int] = []  # webhook connections to the leader that its death broke
    try:
        await chaos_api.create(
            LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, "canary").replicas(1).size(1).obj(), ns
        )
        for failover in range(FAILOVERS):
            takeover, cut = await one_failover(chaos_api, ns, balancer, managers, admissions, failover)
            takeovers.append(takeover)
            cut_at_kill.append(cut)
    finally:
        with contextlib.suppress(ApiStatusError):
            await chaos_api.delete(NAMESPACES, None, ns)
    lost, unexplained = admissions.lost_to_kills()
    kills = admissions.kills
    report_figures(
        "failover",
        failovers=len(takeovers),
        takeover_seconds=takeovers,
        takeover_p50=statistics.median(takeovers),
        takeover_max=max(takeovers),
        admissions=admissions.admitted,
        failed_admissions=len(unexplained),
        lost_in_flight_at_kill=[sum(f.sent <= kills[i] for f in calls) for i, calls in enumerate(lost)],
        lost_written_after_kill=[sum(f.sent > kills[i] for f in calls) for i, calls in enumerate(lost)],
        webhook_connections_cut_by_kill=cut_at_kill,
        balancer_connections=balancer.served,
    )
    assert len(takeovers) == FAILOVERS
    assert all(cut_at_kill), (
        f"a kill broke no webhook connection, so it tested no failover of admission: {cut_at_kill}"
    )
    assert not unexplained, unexplained[:10]
    # A broken webhook connection loses at most one call (HTTP/1.1: one call at a time, and the API
    # server drops a connection whose call failed); every other create was admitted and mutated.
    for failover, (calls, cut) in enumerate(zip(lost, cut_at_kill, strict=True)):
        assert len(calls) <= cut, (failover, cut, [f.message for f in calls])
    assert admissions.admitted >= FAILOVERS * ADMISSIONS


async def one_failover(
    api: KubeClient,
    ns: str,
    balancer: TcpProxy,
    managers: list[ManagerProcess],
    admissions: Admissions,
    failover: int,
) -> tuple[float, int]:
    """Kill the leader mid-admissions; returns the takeover time and the webhook connections it broke."""
    old = await eventually(lambda: holder(api), timeout=LONG_TIMEOUT, message="no Lease holder")
    victim = await eventually(lambda: leading(managers, old), timeout=LONG_TIMEOUT)
    # The API server keeps its webhook connections open: steer them to the leader, so that its
    # death breaks admissions in flight (the balancer then finds the standby).
    balancer.backends = [victim.webhook_port, *(m.webhook_port for m in managers if m is not victim)]
    balancer.round_robin = False
    balancer.cut()
    target = admissions.admitted + ADMISSIONS
    took_over = asyncio.Event()
    creates = asyncio.create_task(_admit_until(admissions, target, took_over))
    try:
        await eventually(lambda: admissions.admitted >= target - ADMISSIONS * 2 // 3, timeout=LONG_TIMEOUT)
        await eventually(
            lambda: balancer.live_to(victim.webhook_port) > 0, message="no webhook call to the leader"
        )
        cut = balancer.live_to(victim.webhook_port)
        opened_to_victim = balancer.served.get(victim.webhook_port, 0)
        victim.kill()
        killed = time.monotonic()
        admissions.kills.append(killed)

        async def taken_over() -> str:
            now = await holder(api)
            assert now, "no holder"
            assert now != old, f"still held by {old!r}"
            return now

        new = await eventually(taken_over, timeout=LONG_TIMEOUT, interval=0.05)
        takeover = round(time.monotonic() - killed, 2)
        took_over.set()
    finally:
        took_over.set()
        await creates
    assert takeover <= TAKEOVER_BOUND, f"failover {failover}: took {takeover} s"
    leading(managers, new)  # the holder is the other, running replica
    # The new leader runs the controllers: it reconciles a scale of the canary.
    await api.merge_patch(LEADERWORKERSETS, ns, "canary", {"spec": {"replicas": failover + 2}})
    await _expect_ready_replicas(api, ns, failover + 2)
    # A connection the balancer was still opening to the leader at the kill (the kernel had
    # accepted it) is broken too: nothing else can connect to the leader while it is dead.
    cut += balancer.served.get(victim.webhook_port, 0) - opened_to_victim
    await victim.start()  # back as the standby
    return takeover, cut


async def _admit_until(admissions: Admissions, target: int, took_over: asyncio.Event) -> None:
    """Admit at least up to ``target`` and at least until the standby took over; give up (the test
    then fails) once creates failed more often than one failover's worth of them."""
    give_up = len(admissions.failed) + ADMISSIONS
    while admissions.admitted < target or not took_over.is_set():
        if len(admissions.failed) >= give_up:
            return
        await admissions.once()


async def _expect_ready_replicas(api: KubeClient, ns: str, replicas: int) -> None:
    async def check() -> bool:
        status = (await api.get(LEADERWORKERSETS, ns, "canary")).get("status") or {}
        assert status.get("readyReplicas") == replicas, (
            f"canary status {status.get('readyReplicas')} != {replicas}"
        )
        return True

    await eventually(check, timeout=LONG_TIMEOUT)
