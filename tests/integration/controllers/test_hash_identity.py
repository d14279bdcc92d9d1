"""Hash group identity against the real API server: the test plays the
Deployment/ReplicaSet controllers, the pod webhook and the kubelet.

Upstream's integration scenarios for Hash: the leader Deployment, admission through the
group-replacement gate (PostTermination waits for a terminating group, Immediate does not), the
worker StatefulSet of a Hash leader, the group-ready condition, Deployment-based status.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import (
    CONTROLLER_REVISIONS,
    DEPLOYMENTS,
    LEADERWORKERSETS,
    PODS,
    SERVICES,
    STATEFULSETS,
)
from tests.support import expect, kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
Obj = dict[str, Any]


async def _deployment(api: KubeClient, ns: str) -> Obj:
    return await kubelet.leader_deployment(api, ns, NAME)


async def _create_leader(api: KubeClient, ns: str, *, node: str | None = None) -> Obj:
    return await kubelet.create_hash_leader(api, ns, NAME, node=node)


def _gated(pod: Obj) -> bool:
    return any(
        g["name"] == c.SCHEDULING_GATE_GROUP_REPLACEMENT for g in pod["spec"].get("schedulingGates") or []
    )


async def _expect_admitted(api: KubeClient, ns: str, name: str) -> None:
    async def admitted() -> bool:
        pod = await api.get(PODS, ns, name)
        assert not _gated(pod), "still gated"
        assert c.ANNOTATION_POD_DELETION_COST not in (pod["metadata"].get("annotations") or {})
        return True

    await eventually(admitted)
    await expect.expect_event(
        api, ns, c.EVENT_GROUP_REPLACEMENT_ADMITTED, f"Leader pod {name} admitted for scheduling"
    )


async def _expect_still_gated(api: KubeClient, ns: str, name: str, blocking: int) -> None:
    note = f"Leader pod {name} waits for {blocking} terminating group(s) to be removed before scheduling"
    await expect.expect_event(api, ns, c.EVENT_GROUP_REPLACEMENT_DEFERRED, note)

    async def gated() -> bool:
        return _gated(await api.get(PODS, ns, name))

    await consistently(gated)


async def _terminating_group(api: KubeClient, ns: str) -> Obj:
    """An old group on its way out: its leader terminating (held by a test finalizer), a worker left."""
    leader = await _create_leader(api, ns, node="node-a")
    lws = await kubelet.get_lws(api, ns, NAME)
    await kubelet.create_worker_pods(api, lws, leader, node_name="node-a")
    name = leader["metadata"]["name"]
    await api.merge_patch(PODS, ns, name, {"metadata": {"finalizers": ["test/hold"]}})
    await api.delete(PODS, ns, name)
    return leader


async def _release(api: KubeClient, ns: str, leader: Obj) -> None:
    name = leader["metadata"]["name"]
    with contextlib.suppress(Exception):
        await api.merge_patch(PODS, ns, name, {"metadata": {"finalizers": None}})
    selector = f"{c.LABEL_GROUP_INDEX}={leader['metadata']['labels'][c.LABEL_GROUP_INDEX]}"
    for pod in await api.list(PODS, ns, label_selector=selector):
        with contextlib.suppress(Exception):
            await api.merge_patch(PODS, ns, pod["metadata"]["name"], {"metadata": {"finalizers": None}})
        with contextlib.suppress(Exception):
            await api.delete(PODS, ns, pod["metadata"]["name"], grace_period_seconds=0)


# ----- scenarios ---------------------------------------------------------------------------------------


async def deployment_shape_and_first_group(api: KubeClient, ns: str) -> None:
    deploy = await _deployment(api, ns)
    template = deploy["spec"]["template"]
    assert template["metadata"]["annotations"][c.ANNOTATION_GROUP_IDENTITY] == c.GROUP_IDENTITY_HASH
    assert template["spec"]["readinessGates"] == [{"conditionType": c.READINESS_GATE_GROUP_READY}]
    assert template["spec"]["subdomain"] == NAME
    assert deploy["metadata"]["ownerReferences"][0]["kind"] == c.LWS_KIND
    await api.get(SERVICES, ns, NAME)  # the shared headless Service
    await expect.expect_event(api, ns, c.EVENT_GROUPS_PROGRESSING, f"Created leader deployment {NAME}")

    leader = await _create_leader(api, ns)
    name = leader["metadata"]["name"]
    await _expect_admitted(api, ns, name)

    async def worker_sts() -> Obj:
        try:
            return await api.get(STATEFULSETS, ns, name)
        except Exception as err:
            raise AssertionError(str(err)) from err

    sts = await eventually(worker_sts)
    annotations = sts["spec"]["template"]["metadata"]["annotations"]
    key = leader["metadata"]["labels"][c.LABEL_GROUP_INDEX]
    assert annotations[c.ANNOTATION_GROUP_IDENTITY] == c.GROUP_IDENTITY_HASH
    assert annotations[c.ANNOTATION_LEADER_ADDRESS] == f"{NAME}-{key[:8]}.{NAME}.{ns}"
    assert sts["spec"]["serviceName"] == NAME
    assert sts["spec"]["selector"]["matchLabels"][c.LABEL_GROUP_INDEX] == key

    async def group_ready(want: str) -> bool:
        pod = await api.get(PODS, ns, name)
        conditions = {cond["type"]: cond for cond in pod["status"].get("conditions") or []}
        cond = conditions.get(c.POD_CONDITION_GROUP_READY)
        assert cond is not None, "no group-ready condition"
        assert cond["status"] == want, cond
        return True

    await eventually(lambda: group_ready("False"))
    await kubelet.set_statefulset_ready(api, ns, name)
    await eventually(lambda: group_ready("True"))

    # The Deployment controller's part: every leader ready and updated.
    status = {
        "observedGeneration": deploy["metadata"]["generation"],
        "replicas": 1,
        "readyReplicas": 1,
        "updatedReplicas": 1,
    }
    await api.patch_status(DEPLOYMENTS, ns, NAME, {"status": status})
    await expect.expect_available_condition(api, ns)
    await expect.expect_status_replicas(api, ns, 1, 1)


async def post_termination_waits(api: KubeClient, ns: str) -> None:
    old = await _terminating_group(api, ns)
    new = await _create_leader(api, ns)
    await _expect_still_gated(api, ns, new["metadata"]["name"], blocking=1)
    await _release(api, ns, old)  # the old group's last pods go: the deletion wakes the gated leader
    await _expect_admitted(api, ns, new["metadata"]["name"])


async def immediate_does_not_wait(api: KubeClient, ns: str) -> None:
    await _terminating_group(api, ns)
    new = await _create_leader(api, ns)
    await _expect_admitted(api, ns, new["metadata"]["name"])


async def replica_cap_per_revision(api: KubeClient, ns: str) -> None:
    first = await _create_leader(api, ns)
    await _expect_admitted(api, ns, first["metadata"]["name"])
    extra = await _create_leader(api, ns)  # more leaders than spec.replicas on one revision

    async def gated() -> bool:
        return _gated(await api.get(PODS, ns, extra["metadata"]["name"]))

    await consistently(gated)


async def _counts(api: KubeClient, ns: str) -> dict[str, int]:
    lws = await kubelet.get_lws(api, ns, NAME)
    raw = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_GROUP_RESTART_COUNTS)
    return {} if raw is None else dict(json.loads(raw))


async def _expect_counts(api: KubeClient, ns: str, want: dict[str, int]) -> None:
    async def check() -> bool:
        got = await _counts(api, ns)
        assert got == want, f"counts {got}, want {want}"
        return True

    await eventually(check)


async def _started_group(api: KubeClient, ns: str) -> Obj:
    leader = await _create_leader(api, ns)
    name = leader["metadata"]["name"]
    await _expect_admitted(api, ns, name)
    lws = await kubelet.get_lws(api, ns, NAME)
    leader = await api.get(PODS, ns, name)
    await kubelet.create_worker_pods(api, lws, leader)
    return leader


def _count_key(leader: Obj) -> str:
    labels = leader["metadata"]["labels"]
    return f"{labels[c.LABEL_TEMPLATE_REVISION_HASH]}/{labels[c.LABEL_GROUP_INDEX]}"


async def budget_follows_the_group_across_keys(api: KubeClient, ns: str) -> None:
    """maxGroupRestarts 1: the first failure is counted on the first key; the replacement leader
    (a new key) inherits that count, so its first failure exhausts the group; the next replacement
    waits while the group is retained; recover clears the count and lets it in."""
    first = await _started_group(api, ns)
    await kubelet.restart_container(api, ns, f"{first['metadata']['name']}-1")
    await expect.expect_pod_deleting(api, ns, first["metadata"]["name"])
    await _expect_counts(api, ns, {_count_key(first): 1})
    await _release(api, ns, first)

    second = await _started_group(api, ns)
    await _expect_counts(api, ns, {_count_key(second): 1})  # inherited at admission
    await kubelet.restart_container(api, ns, f"{second['metadata']['name']}-1")
    note = (
        f"Restart budget exhausted; terminated group {second['metadata']['labels'][c.LABEL_GROUP_INDEX]} "
        "and stopped automatic recovery"
    )
    await expect.expect_event(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED, note, "Warning")
    await expect.expect_condition(api, ns, c.CONDITION_DEGRADED, c.CONDITION_TRUE, c.MESSAGE_DEGRADED_TRUE)

    third = await _create_leader(api, ns)  # the Deployment's replacement for the retained leader

    async def third_gated() -> bool:
        return _gated(await api.get(PODS, ns, third["metadata"]["name"]))

    await consistently(third_gated)
    patch = {"metadata": {"annotations": {c.ANNOTATION_RECOVER: "true"}}}
    await api.merge_patch(PODS, ns, second["metadata"]["name"], patch)
    await _expect_counts(api, ns, {})

    async def released() -> bool:
        pod = await api.get(PODS, ns, second["metadata"]["name"])
        return c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP not in (pod["metadata"].get("finalizers") or [])

    await eventually(released)
    await _release(api, ns, second)
    await _expect_admitted(api, ns, third["metadata"]["name"])
    await _expect_counts(api, ns, {})


async def changed_budget_rolls_no_group_and_applies_at_the_next_failure(api: KubeClient, ns: str) -> None:
    """maxGroupRestarts 1 → 2 with the group's count at 1 (inherited by its replacement): the leader
    Deployment and the revisions stay as they are, the leader runs on; the next failure recreates
    the group (under the old limit it would have exhausted it), then 2 → 1 exhausts at the next."""
    first = await _started_group(api, ns)
    await kubelet.restart_container(api, ns, f"{first['metadata']['name']}-1")
    await expect.expect_pod_deleting(api, ns, first["metadata"]["name"])
    await _release(api, ns, first)
    second = await _started_group(api, ns)
    await _expect_counts(api, ns, {_count_key(second): 1})
    before = await _rollout_state(api, ns)

    await _set_budget(api, ns, 2, second)
    await _expect_unrolled(api, ns, before, second)
    await _expect_counts(api, ns, {_count_key(second): 1})
    await kubelet.restart_container(api, ns, f"{second['metadata']['name']}-1")
    await expect.expect_pod_deleting(api, ns, second["metadata"]["name"])
    await _release(api, ns, second)
    third = await _started_group(api, ns)
    await _expect_counts(api, ns, {_count_key(third): 2})
    assert not await expect.events_with(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED)

    await _set_budget(api, ns, 1, third)
    await _expect_unrolled(api, ns, before, third)
    await kubelet.restart_container(api, ns, f"{third['metadata']['name']}-1")
    note = (
        f"Restart budget exhausted; terminated group {third['metadata']['labels'][c.LABEL_GROUP_INDEX]} "
        "and stopped automatic recovery"
    )
    await expect.expect_event(api, ns, c.EVENT_REPLICA_RESTART_BUDGET_EXCEEDED, note, "Warning")
    await _expect_counts(api, ns, {_count_key(third): 2})


async def _rollout_state(api: KubeClient, ns: str) -> Obj:
    revisions = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
    deploy = await _deployment(api, ns)
    return {
        "revisions": sorted((r["metadata"]["name"], r["metadata"]["uid"]) for r in revisions),
        "template": deploy["spec"]["template"],
    }


async def _set_budget(api: KubeClient, ns: str, budget: int, leader: Obj) -> None:
    def change(lws: Obj) -> None:
        lws["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = budget

    await kubelet.update_lws(api, ns, NAME, change)
    await processed.expect_lws_processed(api, ns, NAME)
    await processed.expect_pods_processed(api, ns, [leader["metadata"]["name"]])


async def _expect_unrolled(api: KubeClient, ns: str, before: Obj, leader: Obj) -> None:
    name, uid = leader["metadata"]["name"], leader["metadata"]["uid"]

    async def unchanged() -> bool:
        assert await _rollout_state(api, ns) == before
        pod = await api.get(PODS, ns, name)
        assert pod["metadata"]["uid"] == uid
        assert pod["metadata"].get("deletionTimestamp") is None, f"{name} deleted"
        return True

    await consistently(unchanged)


async def unique_per_replica_service_named_after_hostname(api: KubeClient, ns: str) -> None:
    leader = await _create_leader(api, ns)
    hostname = leader["spec"]["hostname"]
    await _expect_admitted(api, ns, leader["metadata"]["name"])

    async def service() -> Obj:
        try:
            return await api.get(SERVICES, ns, hostname)
        except Exception as err:
            raise AssertionError(f"service {hostname}: {err}") from err

    svc = await eventually(service)
    key = leader["metadata"]["labels"][c.LABEL_GROUP_INDEX]
    assert svc["spec"]["selector"] == {c.LABEL_SET_NAME: NAME, c.LABEL_GROUP_INDEX: key}
    assert svc["metadata"]["ownerReferences"][0]["name"] == leader["metadata"]["name"]

    async def worker_service_name() -> bool:
        sts = await api.get(STATEFULSETS, ns, leader["metadata"]["name"])
        assert sts["spec"]["serviceName"] == hostname
        return True

    await eventually(worker_service_name)


@dataclass(frozen=True)
class Case:
    policy: str
    steps: Callable[[KubeClient, str], Awaitable[None]]
    limit: int | None = None
    unique: bool = False


CASES = [
    pytest.param(
        Case(c.GROUP_REPLACEMENT_POST_TERMINATION, deployment_shape_and_first_group),
        id="leader deployment, admission, workers, group-ready, status",
    ),
    pytest.param(
        Case(c.GROUP_REPLACEMENT_POST_TERMINATION, post_termination_waits),
        id="PostTermination waits for the terminating group",
    ),
    pytest.param(
        Case(c.GROUP_REPLACEMENT_IMMEDIATE, immediate_does_not_wait),
        id="Immediate starts the replacement at once",
    ),
    pytest.param(
        Case(c.GROUP_REPLACEMENT_POST_TERMINATION, replica_cap_per_revision),
        id="no more ungated groups than spec.replicas per revision",
    ),
    pytest.param(
        Case(c.GROUP_REPLACEMENT_IMMEDIATE, budget_follows_the_group_across_keys, limit=1),
        id="enforces maxGroupRestarts in Hash mode: the count follows the group to its new key",
    ),
    pytest.param(
        Case(
            c.GROUP_REPLACEMENT_IMMEDIATE,
            changed_budget_rolls_no_group_and_applies_at_the_next_failure,
            limit=1,
        ),
        id="Hash: a changed maxGroupRestarts rolls no group and applies at the next failure",
    ),
    pytest.param(
        Case(
            c.GROUP_REPLACEMENT_POST_TERMINATION, unique_per_replica_service_named_after_hostname, unique=True
        ),
        id="UniquePerReplica: the per-replica Service is named after the leader's hostname",
    ),
]


def test_case_count() -> None:
    assert len(CASES) == 7


@pytest.mark.parametrize("case", CASES)
async def test_hash_identity(api: KubeClient, ns: str, case: Case) -> None:
    builder = LeaderWorkerSetBuilder(ns).replicas(1).size(2)
    if case.limit is not None:
        builder = builder.max_group_restarts(case.limit)
    if case.unique:
        builder = builder.subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA)
    body = builder.obj()
    body["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    body["spec"]["groupReplacementPolicy"] = case.policy
    await api.create(LEADERWORKERSETS, body)
    await case.steps(api, ns)
