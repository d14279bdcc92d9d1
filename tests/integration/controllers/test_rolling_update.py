"""Rolling updates of an Ordinal LWS: upstream's rolling-update entries as a table of steps.

Each step is an action (what the user, the StatefulSet controller or the kubelet does) and the
state the controllers must reach: leader StatefulSet replicas and partition, status ready/updated
counts, and whether the set is Available or still rolling. `None` means "not checked in this step",
as upstream leaves some of these out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support import expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
Action = Callable[[KubeClient, str], Awaitable[None]]

AVAILABLE = "available"  # Available, not Progressing
ROLLING = "rolling"  # not Available, Progressing, UpdateInProgress
UNAVAILABLE = "unavailable"  # not Available, Progressing
UPDATING = "updating"  # Progressing, UpdateInProgress (Available not checked)


@dataclass(frozen=True)
class Want:
    replicas: int | None = None
    partition: int | None = None
    ready: int | None = None
    updated: int | None = None
    state: str | None = None
    revisions: int | None = None
    event: str | None = None  # a GroupsUpdating note


@dataclass(frozen=True)
class Step:
    actions: tuple[Action, ...]
    want: Want


@dataclass(frozen=True)
class Case:
    build: Callable[[LeaderWorkerSetBuilder], LeaderWorkerSetBuilder]
    steps: tuple[Step, ...] = field(default_factory=tuple)


def step(*actions: Action, **want: Any) -> Step:
    return Step(actions, Want(**want))


# ----- actions -----------------------------------------------------------------------------------------


def ready_all(groups: int) -> Action:
    async def act(api: KubeClient, ns: str) -> None:
        await kubelet.set_groups_ready(api, ns, groups)

    return act


def ready(*indexes: int) -> Action:
    async def act(api: KubeClient, ns: str) -> None:
        for i in indexes:
            await kubelet.set_group_ready(api, ns, f"{NAME}-{i}")

    return act


def change(fn: Callable[[dict[str, Any]], None]) -> Action:
    async def act(api: KubeClient, ns: str) -> None:
        await kubelet.update_lws(api, ns, NAME, fn)

    return act


def worker_container(name: str) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["name"] = name

    return fn


def worker_image(image: str) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = image

    return fn


def leader_container(name: str) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["name"] = name

    return fn


def replicas(n: int) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["replicas"] = n

    return fn


def both(*fns: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        for f in fns:
            f(lws)

    return fn


def create_leaders(start: int, end: int, *, stale: bool = False) -> Action:
    """The leader StatefulSet creating ordinals [start, end) at the LWS's current revision.

    `stale`: at the revision of the existing leader `<lws>-0` instead, as upstream's steps do when
    they create pods in the same step as a template change (from the LWS read before the change).
    """

    async def act(api: KubeClient, ns: str) -> None:
        lws = await kubelet.get_lws(api, ns, NAME)
        key = None
        if stale:
            leader = await api.get(PODS, ns, f"{NAME}-0")
            key = leader["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
        await kubelet.create_leader_pods(api, lws, start, end, revision_key=key)

    return act


def delete_groups(start: int, end: int) -> Action:
    async def act(api: KubeClient, ns: str) -> None:
        await kubelet.delete_groups(api, ns, start, end)

    return act


def old_leaders(start: int, end: int) -> Action:
    return create_leaders(start, end, stale=True)


def unready(index: int) -> Action:
    """Upstream's SetStatefulsetToUnReady: the worker StatefulSet is rolling its own pods."""

    async def act(api: KubeClient, ns: str) -> None:
        status = {"currentRevision": "fuz", "updateRevision": "bar"}
        await api.patch_status(STATEFULSETS, ns, f"{NAME}-{index}", {"status": status})

    return act


def partition(n: int) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"] = n

    return fn


def size(n: int) -> Callable[[dict[str, Any]], None]:
    def fn(lws: dict[str, Any]) -> None:
        lws["spec"]["leaderWorkerTemplate"]["size"] = n

    return fn


async def applied(api: KubeClient, ns: str) -> None:
    """Wait until the controller applied the new revision (group readiness relabels leaders to it)."""
    lws = await kubelet.get_lws(api, ns, NAME)
    await expect.expect_valid_leader_statefulset(api, ns, int(lws["spec"]["replicas"]))


async def delete_groups_above_replicas(api: KubeClient, ns: str) -> None:
    await kubelet.delete_groups_above_replicas(api, ns)


# ----- checks ------------------------------------------------------------------------------------------


async def expect_state(api: KubeClient, ns: str, want: Want) -> None:
    if want.replicas is not None:
        await expect.expect_valid_leader_statefulset(api, ns, want.replicas)
    if want.partition is not None:
        await expect.expect_partition(api, ns, want.partition)
    if want.event is not None:  # GroupsUpdating: a partition move or the UpdateInProgress condition
        await expect.expect_event(api, ns, c.EVENT_GROUPS_UPDATING, want.event)
    if want.state == AVAILABLE:
        await expect.expect_available_condition(api, ns)
        await expect.expect_condition(api, ns, c.CONDITION_PROGRESSING, c.CONDITION_FALSE)
    elif want.state == ROLLING:
        await expect.expect_condition(api, ns, c.CONDITION_AVAILABLE, c.CONDITION_FALSE)
        await expect.expect_progressing(api, ns)
        await expect.expect_condition(
            api, ns, c.CONDITION_UPDATE_IN_PROGRESS, c.CONDITION_TRUE, c.MESSAGE_GROUPS_UPDATING
        )
    elif want.state == UNAVAILABLE:
        await expect.expect_condition(api, ns, c.CONDITION_AVAILABLE, c.CONDITION_FALSE)
        await expect.expect_progressing(api, ns)
    elif want.state == UPDATING:
        await expect.expect_progressing(api, ns)
        await expect.expect_condition(
            api, ns, c.CONDITION_UPDATE_IN_PROGRESS, c.CONDITION_TRUE, c.MESSAGE_GROUPS_UPDATING
        )
    if want.ready is not None and want.updated is not None:
        await expect.expect_status_replicas(api, ns, want.ready, want.updated)
    if want.revisions is not None:
        await expect.expect_revisions(api, ns, want.revisions)


RESIZE_EVENT = "Rolling Upgrade is in progress, with 2 groups ready of total 2 groups"


def settled(n: int, **more: Any) -> Step:
    """Every group ready on one revision: the start and the end of every rollout."""
    return step(ready_all(n), replicas=n, partition=0, ready=n, updated=n, state=AVAILABLE, **more)


CASES = [
    pytest.param(
        Case(
            lambda b: b.replicas(4),
            (
                settled(4),
                step(
                    change(leader_container("new-leader-name")),
                    replicas=4, partition=3, ready=4, updated=0, state=ROLLING, event="Updating replica 3",
                ),
                step(ready(3), replicas=4, partition=2, ready=4, updated=1, state=ROLLING,
                     event="Updating replica 2"),
                step(ready(1), replicas=4, partition=2, ready=4, updated=2, state=ROLLING),
                settled(4),
            ),
        ),
        id="leaderTemplate changed with default strategy",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_unavailable(2),
            (
                settled(4),
                step(change(worker_container("new-worker-name")), replicas=4, partition=2, ready=4, updated=0,
                     state=ROLLING),
                step(ready(3), replicas=4, partition=1, ready=4, updated=1, state=ROLLING),
                step(ready(2), replicas=4, partition=0, ready=4, updated=2, state=ROLLING),
                step(ready(1, 0), replicas=4, partition=0, ready=4, updated=4, state=AVAILABLE),
            ),
        ),
        id="workerTemplate changed with maxUnavailable=2",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_unavailable(10),
            (
                settled(4),
                step(change(worker_container("new-worker-name")), replicas=4, partition=0, ready=4, updated=0,
                     state=ROLLING),
                settled(4),
            ),
        ),
        id="workerTemplate changed with maxUnavailable greater than replicas",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4),
            (
                settled(4),
                step(change(both(replicas(6), worker_container("new-worker"))), old_leaders(4, 6),
                     replicas=6, partition=4, ready=4, updated=0, state=ROLLING),
                settled(6),
            ),
        ),
        id="rolling update with both worker template and number of replicas changed",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4),
            (
                settled(4),
                step(change(worker_container("new-worker-name")), replicas=4, partition=3, ready=4, updated=0,
                     state=ROLLING),
                step(ready(3), replicas=4, partition=2, ready=4, updated=1, state=ROLLING),
                step(change(replicas(6)), create_leaders(4, 6), ready(4, 5), replicas=6, partition=2, ready=6,
                     updated=3, state=ROLLING),
                settled(6),
            ),
        ),
        id="replicas increases during rolling update",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(6),
            (
                settled(6),
                step(change(worker_image("docker.io/nginxinc/nginx-unprivileged:1.26")), replicas=6,
                     partition=5, ready=6, updated=0, state=ROLLING),
                step(change(replicas(3)), delete_groups_above_replicas, replicas=3, partition=2, ready=3,
                     updated=0, state=ROLLING),
                settled(3),
            ),
        ),
        id="replicas decreases during rolling update",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_unavailable(0).max_surge(1),
            (
                settled(4),
                step(change(worker_container("new-worker")), old_leaders(4, 5), replicas=5, partition=4,
                     ready=4, updated=0, state=ROLLING),
                step(ready(4), replicas=5, partition=3, ready=5, updated=1, state=ROLLING),
                step(ready(3), replicas=5, partition=2, ready=5, updated=2, state=ROLLING),
                step(ready(2), replicas=5, partition=1, ready=5, updated=3, state=ROLLING),
                step(ready(1), replicas=5, partition=0, ready=5, updated=4, state=ROLLING),
                step(ready(0), delete_groups(4, 5), replicas=4, partition=0, ready=4, updated=4,
                     state=AVAILABLE),
            ),
        ),
        id="rolling update with maxUnavailable zero and maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_surge(1),
            (
                settled(4),
                step(change(worker_container("new-worker")), old_leaders(4, 5), replicas=5, partition=3,
                     ready=4, updated=0, state=ROLLING),
                step(ready(4), replicas=5, partition=2, ready=5, updated=1, state=ROLLING),
                step(ready(3), replicas=5, partition=1, ready=5, updated=2, state=ROLLING),
                step(ready(2), replicas=5, partition=0, ready=5, updated=3, state=ROLLING),
                step(ready(1), delete_groups(4, 5), replicas=4, partition=0, ready=4, updated=3,
                     state=ROLLING),
                step(ready(0), replicas=4, partition=0, ready=4, updated=4, state=AVAILABLE),
            ),
        ),
        id="rolling update with maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_surge(2).max_unavailable(2),
            (
                settled(4),
                step(change(worker_container("new-worker")), old_leaders(4, 6), replicas=6, partition=2,
                     ready=4, updated=0, state=ROLLING),
                step(ready(3, 2), delete_groups(4, 6), replicas=4, partition=0, ready=4, updated=2),
                step(ready(1, 0), replicas=4, partition=0, ready=4, updated=4, state=AVAILABLE),
            ),
        ),
        id="rolling update with maxUnavailable and maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.max_surge(2),
            (
                settled(2),
                step(change(both(worker_container("new-worker"), replicas(4))), old_leaders(2, 6),
                     partition=2),
                step(ready_all(6), state=AVAILABLE),
                step(delete_groups_above_replicas, replicas=4, partition=0, ready=4, updated=4,
                     state=AVAILABLE),
            ),
        ),
        id="rolling update with replicas scaled up and maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(6).max_surge(2),
            (
                settled(6),
                step(change(both(worker_container("new-worker"), replicas(3))), partition=2),
                step(delete_groups(5, 6), ready_all(5), state=AVAILABLE),
                step(delete_groups_above_replicas, replicas=3, partition=0, ready=3, updated=3,
                     state=AVAILABLE),
            ),
        ),
        id="rolling update with replicas scaled down and maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.max_surge(4),
            (
                settled(2),
                step(change(worker_container("new-worker")), old_leaders(2, 3), partition=1),
                step(ready_all(3), state=AVAILABLE),
                step(delete_groups_above_replicas, replicas=2, partition=0, ready=2, updated=2,
                     state=AVAILABLE),
            ),
        ),
        id="rolling update with maxSurge greater than replicas",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_surge(2),
            (
                settled(4),
                step(change(worker_container("new-worker")), old_leaders(4, 6), partition=3, ready=4,
                     updated=0),
                step(change(replicas(6)), create_leaders(6, 8), partition=3, ready=4, updated=2),
                step(ready(7, 6), partition=3, ready=6, updated=2),
                step(change(replicas(2)), delete_groups(4, 8), delete_groups(3, 4), partition=1, ready=3,
                     updated=0),
                step(ready(2), partition=0, ready=3, updated=1),
                step(ready(1), delete_groups(2, 3), partition=0, ready=2, updated=1),
                step(ready(0), partition=0, ready=2, updated=2, state=AVAILABLE),
            ),
        ),
        id="scale up and down during rolling update with maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_surge(2),
            (
                settled(4, revisions=1),
                step(change(worker_container("new-worker")), old_leaders(4, 6), partition=3, ready=4,
                     updated=0, revisions=2),
                step(ready(5, 4), partition=1, ready=6, updated=2, revisions=2),
                step(change(worker_container("new-worker-2")), partition=3, ready=6, updated=0, revisions=3),
                step(ready_all(6), state=AVAILABLE),
                step(delete_groups_above_replicas, partition=0, ready=4, updated=4, state=AVAILABLE,
                     revisions=1),
            ),
        ),
        id="multiple rolling update with maxSurge set",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(4).max_unavailable(2),
            (
                settled(4),
                step(unready(1), ready=3, updated=4, state=UNAVAILABLE),
                step(change(worker_container("new-worker-name")), replicas=4, partition=3, ready=3, updated=0,
                     state=ROLLING),
                settled(4),
            ),
        ),
        id="rolling update with unhealthy pods below partition",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(2).max_unavailable(1),
            (
                settled(2),
                step(unready(0), partition=0, state=UNAVAILABLE),
                step(unready(1), partition=0, state=UNAVAILABLE),
                step(change(worker_container("new-worker-name")), replicas=2, partition=1, ready=0, updated=0,
                     state=ROLLING),
                step(ready(1), partition=0),
                step(ready(0), state=AVAILABLE),
            ),
        ),
        id="rolling update with no ready replicas",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(2).size(3),
            (
                settled(2),
                step(change(size(4)), applied, ready_all(2), replicas=2, partition=0, ready=2, updated=2,
                     state=AVAILABLE, event=RESIZE_EVENT),
            ),
        ),
        id="resize should update the size of the replicas",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(6).partition(4),
            (
                step(ready_all(6), replicas=6, partition=4, ready=6, updated=6, state=AVAILABLE),
                step(change(worker_container("new-worker-name")), replicas=6, partition=5, ready=6, updated=0,
                     state=UPDATING),
                step(ready(5), replicas=6, partition=4, ready=6, updated=1, state=UPDATING),
                step(ready(4), replicas=6, partition=4, ready=6, updated=2, state=AVAILABLE),
                step(change(partition(2)), replicas=6, partition=3, ready=6, updated=2, state=UPDATING),
                step(ready(3), replicas=6, partition=2, ready=6, updated=3, state=UPDATING),
                step(ready(2), replicas=6, partition=2, ready=6, updated=4, state=AVAILABLE),
            ),
        ),
        id="rolling update with the partition setting",
    ),
    pytest.param(
        Case(
            lambda b: b.replicas(3).max_surge(1).partition(2),
            (
                step(ready_all(3), replicas=3, partition=2, ready=3, updated=3, state=AVAILABLE),
                step(change(worker_container("new-worker-name")), replicas=4, partition=2, ready=3, updated=0,
                     state=UPDATING),
                step(create_leaders(3, 4), ready(3, 2), replicas=4, partition=2, ready=4, updated=2,
                     state=AVAILABLE),
                step(change(partition(0)), replicas=4, partition=0, ready=4, updated=2, state=UPDATING),
                step(ready(1, 0), replicas=3, partition=0, ready=4, updated=4, state=AVAILABLE),
                step(delete_groups(3, 4), replicas=3, partition=0, ready=3, updated=3, state=AVAILABLE),
            ),
        ),
        id="rolling update with the partition and maxSurge setting",
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES)
async def test_rolling_update(api: KubeClient, ns: str, case: Case) -> None:
    lws = await api.create(LEADERWORKERSETS, case.build(LeaderWorkerSetBuilder(ns)).obj())
    await kubelet.create_leader_pods(api, lws, 0, int(lws["spec"]["replicas"]))
    for number, current in enumerate(case.steps):
        for action in current.actions:
            await action(api, ns)
        try:
            await expect_state(api, ns, current.want)
        except AssertionError as err:
            raise AssertionError(f"step {number}: {err}") from err
