"""Hash group identity on the full local cluster: leaders in a Deployment (real Deployment and
ReplicaSet controllers), groups keyed by random 40-hex keys, admitted through the
group-replacement gate, rolled out by the Deployment with maxSurge."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DEPLOYMENTS, PODS, STATEFULSETS
from tests.support.builders import NAME, LeaderWorkerSetBuilder
from tests.support.expect import expect_event, expect_groups_available
from tests.support.lwsapi import create, update_worker_image
from tests.support.objects import is_ready
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

KEY = re.compile(r"^[0-9a-f]{40}$")


def hash_lws(ns: str, replicas: int, size: int, max_surge: int = 0) -> dict[str, object]:
    lws = LeaderWorkerSetBuilder(ns).replicas(replicas).size(size).max_surge(max_surge).obj()
    lws["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    return lws


async def expect_hash_groups(
    api: KubeClient, ns: str, replicas: int, size: int, revision: str = ""
) -> set[str]:
    """`replicas` complete, ready groups, each keyed by a 40-hex key; returns the keys."""

    async def check() -> set[str]:
        pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
        pods = [p for p in pods if p["metadata"].get("deletionTimestamp") is None]
        leaders = [p for p in pods if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0"]
        assert len(leaders) == replicas, [p["metadata"]["name"] for p in leaders]
        keys = set()
        for leader in leaders:
            labels = leader["metadata"]["labels"]
            key = labels[c.LABEL_GROUP_INDEX]
            assert KEY.match(key), key
            assert labels[c.LABEL_GROUP_KEY] == key
            assert leader["spec"]["hostname"] == f"{NAME}-{key[:8]}"
            assert not any(
                g["name"] == c.SCHEDULING_GATE_GROUP_REPLACEMENT
                for g in leader["spec"].get("schedulingGates") or []
            ), "leader still gated"
            if revision:
                assert labels[c.LABEL_TEMPLATE_REVISION_HASH] == revision
            members = [p for p in pods if p["metadata"]["labels"].get(c.LABEL_GROUP_INDEX) == key]
            assert len(members) == size, f"group {key[:8]}: {len(members)} pods"
            assert all(is_ready(p) for p in members), f"group {key[:8]} not ready"
            conditions = {cond["type"]: cond["status"] for cond in leader["status"].get("conditions") or []}
            if size > 1:
                assert conditions.get(c.POD_CONDITION_GROUP_READY) == "True", conditions
            keys.add(key)
        return keys

    return await eventually(check, timeout=LONG_TIMEOUT)


async def test_a_hash_lws_of_three_groups_of_four_becomes_available_and_rolls_out_with_max_surge(
    api: KubeClient, ns: str
) -> None:
    replicas, size = 3, 4
    await create(api, hash_lws(ns, replicas, size, max_surge=1))
    keys = await expect_hash_groups(api, ns, replicas, size)
    await expect_groups_available(api, ns, replicas)
    deploy = await api.get(DEPLOYMENTS, ns, NAME)
    assert deploy["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 1
    gates = deploy["spec"]["template"]["spec"].get("readinessGates")
    assert gates == [{"conditionType": c.READINESS_GATE_GROUP_READY}]
    assert not await api.list(
        STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_ROLE}=leader"
    )

    old_revision = deploy["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    await update_worker_image(api, ns)

    async def new_revision() -> str:
        deploy = await api.get(DEPLOYMENTS, ns, NAME)
        revision = str(deploy["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH])
        assert revision != old_revision
        return revision

    revision = await eventually(new_revision)
    new_keys = await expect_hash_groups(api, ns, replicas, size, revision=revision)
    assert not new_keys & keys, "a rolled group kept its key"
    await expect_groups_available(api, ns, replicas)


async def _gated_leaders(api: KubeClient, ns: str) -> list[dict[str, object]]:
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_WORKER_INDEX}=0")
    return [
        p
        for p in pods
        if p["metadata"].get("deletionTimestamp") is None
        and any(
            g["name"] == c.SCHEDULING_GATE_GROUP_REPLACEMENT for g in p["spec"].get("schedulingGates") or []
        )
    ]


@pytest.mark.parametrize(
    ("policy", "waits"),
    [
        pytest.param(
            c.GROUP_REPLACEMENT_POST_TERMINATION, True, id="PostTermination waits for the old group"
        ),
        pytest.param(c.GROUP_REPLACEMENT_IMMEDIATE, False, id="Immediate starts the new group at once"),
    ],
)
async def test_group_replacement_policy(api: KubeClient, ns: str, policy: str, waits: bool) -> None:
    """A group is replaced while its old pods are still terminating (a worker held by a finalizer
    stands for a slow shutdown): PostTermination keeps the new leader gated until they are gone,
    Immediate lets it schedule at once."""
    replicas, size = 2, 2
    body = hash_lws(ns, replicas, size)
    body["spec"]["groupReplacementPolicy"] = policy  # type: ignore[index]
    await create(api, body)
    keys = await expect_hash_groups(api, ns, replicas, size)
    old_key = sorted(keys)[0]
    old_pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_GROUP_INDEX}={old_key}")
    old_leader = next(p for p in old_pods if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0")
    old_worker = next(p for p in old_pods if p["metadata"]["labels"][c.LABEL_WORKER_INDEX] != "0")
    worker_name = old_worker["metadata"]["name"]
    await api.merge_patch(PODS, ns, worker_name, {"metadata": {"finalizers": ["e2e.test/slow-shutdown"]}})
    try:
        await api.delete(PODS, ns, old_leader["metadata"]["name"])

        async def replaced() -> bool:
            pods = await api.list(
                PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME},{c.LABEL_WORKER_INDEX}=0"
            )
            live = [p for p in pods if p["metadata"].get("deletionTimestamp") is None]
            assert len(live) == replicas, [p["metadata"]["name"] for p in live]
            return True

        await eventually(replaced, timeout=LONG_TIMEOUT)
        if waits:
            (gated,) = await eventually(_gated_leaders_one(api, ns))
            note = c.MSG_GROUP_REPLACEMENT_DEFERRED % (gated["metadata"]["name"], 1)
            await expect_event(api, ns, c.EVENT_GROUP_REPLACEMENT_DEFERRED, note)
            await consistently(lambda: _still_gated(api, ns, str(gated["metadata"]["name"])))
        else:
            await expect_hash_groups_excluding(api, ns, replicas, size, old_key)
    finally:
        await api.merge_patch(PODS, ns, worker_name, {"metadata": {"finalizers": None}})
    new_keys = await expect_hash_groups(api, ns, replicas, size)
    assert old_key not in new_keys
    await expect_groups_available(api, ns, replicas)


def _gated_leaders_one(api: KubeClient, ns: str) -> Callable[[], Awaitable[list[dict[str, object]]]]:
    async def one() -> list[dict[str, object]]:
        gated = await _gated_leaders(api, ns)
        assert len(gated) == 1, [p["metadata"]["name"] for p in gated]
        return gated

    return one


async def _still_gated(api: KubeClient, ns: str, name: str) -> bool:
    pod = await api.get(PODS, ns, name)
    return any(
        g["name"] == c.SCHEDULING_GATE_GROUP_REPLACEMENT for g in pod["spec"].get("schedulingGates") or []
    )


async def expect_hash_groups_excluding(
    api: KubeClient, ns: str, replicas: int, size: int, old_key: str
) -> None:
    """The replacement group runs (every live leader admitted and ready) while the old one is
    still terminating."""
    keys = await expect_hash_groups(api, ns, replicas, size)
    assert old_key not in keys
    held = await api.list(PODS, ns, label_selector=f"{c.LABEL_GROUP_INDEX}={old_key}")
    assert held, "the old group was already gone: nothing shows Immediate did not wait"
