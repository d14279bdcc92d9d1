"""Leader election hand-over between two electors, and events written, against a real kube-apiserver."""

from __future__ import annotations

import asyncio

import pytest

from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.events import ApiEventSink, EventRecorder, ObjectReference
from leaderworkerset.runtime.leaderelection import ElectionConfig, LeaderElector
from leaderworkerset.runtime.resources import EVENTS, LEASES
from tests.support.wait import consistently, eventually

pytestmark = pytest.mark.cluster

# Short durations keep the test fast; the ordering constraint is the same as with 15/10/2 s.
FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.2}


def elector(client: KubeClient, namespace: str, identity: str) -> LeaderElector:
    return LeaderElector(
        client, ElectionConfig(namespace=namespace, name="lws-test", identity=identity, **FAST)
    )


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_hand_over_on_release(client: KubeClient, namespace: str) -> None:
    a, b = elector(client, namespace, "a"), elector(client, namespace, "b")
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 10)
    tb = asyncio.create_task(b.run())
    try:
        # Positive sign first: b has read the lease and seen a as its holder. Then b must not lead
        # while a renews, for longer than a lease lasts (a stale lease would be taken by then).
        await eventually(lambda: b.observed_holder == "a", message="b never looked at the lease")

        async def a_keeps_leading() -> bool:
            lease = await client.get(LEASES, namespace, "lws-test")
            assert lease["spec"]["holderIdentity"] == "a"
            assert not b.is_leader
            return True

        await consistently(a_keeps_leading, duration=FAST["lease_duration"] + 1)

        await stop(ta)  # graceful: a releases the lease
        await asyncio.wait_for(b.leading.wait(), 10)
        lease = await client.get(LEASES, namespace, "lws-test")
        assert lease["spec"]["holderIdentity"] == "b"
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        await stop(ta)
        await stop(tb)


async def test_take_over_after_leader_stops_renewing(client: KubeClient, namespace: str) -> None:
    a = LeaderElector(
        client,
        ElectionConfig(namespace=namespace, name="lws-test", identity="a", release_on_cancel=False, **FAST),
    )
    b = elector(client, namespace, "b")
    ta = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 10)
    tb = asyncio.create_task(b.run())
    try:
        await stop(ta)  # a crashes: no release, the lease must expire first
        await asyncio.wait_for(b.leading.wait(), 10)
        lease = await client.get(LEASES, namespace, "lws-test")
        assert lease["spec"]["holderIdentity"] == "b"
    finally:
        await stop(tb)


async def test_events_written_and_folded_into_series(client: KubeClient, namespace: str) -> None:
    regarding = ObjectReference(
        apiVersion="leaderworkerset.x-k8s.io/v1",
        kind="LeaderWorkerSet",
        namespace=namespace,
        name="demo",
        uid="u-1",
    )
    recorder = EventRecorder(
        ApiEventSink(client), "leaderworkerset", reporting_instance="leaderworkerset-test"
    )
    writer = asyncio.create_task(recorder.run())
    try:
        recorder.normal(regarding, "CreatingRevision", "Create", "Creating revision with key abc")
        recorder.warning(regarding, "FailedCreate", "Create", "boom")
        recorder.warning(regarding, "FailedCreate", "Create", "boom")

        async def written() -> list[dict[str, object]] | None:
            items = await client.list(EVENTS, namespace)
            failed = [e for e in items if e.get("reason") == "FailedCreate"]
            if len(items) == 2 and failed and (failed[0].get("series") or {}).get("count") == 2:
                return items
            return None

        items = await eventually(written)
        by_reason = {e["reason"]: e for e in items}
        created = by_reason["CreatingRevision"]
        assert created["reportingController"] == "leaderworkerset"
        assert created["reportingInstance"] == "leaderworkerset-test"
        assert created["action"] == "Create"
        assert created["type"] == "Normal"
        assert created["note"] == "Creating revision with key abc"
        assert created["regarding"] == {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "namespace": namespace,
            "name": "demo",
            "uid": "u-1",
        }
        assert by_reason["FailedCreate"]["type"] == "Warning"
    finally:
        await stop(writer)
