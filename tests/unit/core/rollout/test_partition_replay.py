"""Upstream's controller integration table, replayed against the pure rollout and status logic.

Upstream runs these against envtest, where no StatefulSet controller exists: the test itself
creates, readies and deletes leader pods, and the LWS and pod controllers reconcile in between.
`EnvWorld` plays exactly that world: each step applies the test's actions, then reconciles until
nothing changes (what `Eventually` waits for), and checks the leader StatefulSet's replicas and
partition, the status counts and the conditions upstream checks.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.statefulsets import leader_statefulset
from leaderworkerset.core.desired.status import plan_status
from leaderworkerset.core.rollout.partition import plan_rollout_for
from tests.support.builders import LeaderWorkerSetBuilder, cached_lws, leader_pod, worker_statefulset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Group:
    revision: str
    ready: bool = False


@dataclass
class EnvWorld:
    """An LWS (size 2), its leader StatefulSet and the groups the test created."""

    lws: dict[str, Any]
    revision: str = "rev1"
    revision_created: bool = False
    sts: dict[str, Any] | None = None
    groups: dict[int, Group] = field(default_factory=dict)

    @property
    def replicas(self) -> int:
        return int(self.lws["spec"]["replicas"])

    def leader_pods(self) -> list[dict[str, Any]]:
        return [
            leader_pod("test-sample", i, g.revision, ready=g.ready) for i, g in sorted(self.groups.items())
        ]

    def worker_statefulsets(self) -> list[dict[str, Any]]:
        return [
            worker_statefulset(pod, ready=pod["status"]["phase"] == "Running") for pod in self.leader_pods()
        ]

    def reconcile(self) -> tuple[Any, ...]:
        stss = self.worker_statefulsets()
        decision = plan_rollout_for(
            self.lws,
            self.sts,
            revision_key=self.revision,
            revision_created=self.revision_created,
            leader_pods=self.leader_pods(),
            statefulsets=stss,
        )
        self.revision_created = False
        self.sts = leader_statefulset(
            self.lws, partition=decision.partition, replicas=decision.replicas, revision_key=self.revision
        )
        self.sts["status"] = {"replicas": len(self.groups)}
        plan = plan_status(
            self.lws,
            self.sts,
            revision_key=self.revision,
            leader_pods=self.leader_pods(),
            worker_statefulsets={s["metadata"]["name"]: s for s in stss},
            now=NOW,
        )
        self.lws["status"] = plan.status
        return (decision.partition, decision.replicas, plan.changed)

    def settle(self) -> None:
        for _ in range(20):
            before = self.reconcile()
            if not before[2] and self.reconcile()[:2] == before[:2]:
                return
        raise AssertionError("the controller never settled")

    # --- what upstream's test helpers do ---

    def update_template(self, revision: str) -> None:
        self.revision, self.revision_created = revision, True

    def set_replicas(self, n: int) -> None:
        self.lws["spec"]["replicas"] = n

    def create(self, start: int, end: int, revision: str) -> None:
        for i in range(start, end):
            self.groups[i] = Group(revision)

    def group_ready(self, *indexes: int) -> None:
        """SetPodGroupToReady: the leader takes the leader StatefulSet's key and both become ready."""
        for i in indexes:
            self.groups[i] = Group(self.revision, ready=True)

    def all_ready(self) -> None:
        self.group_ready(*self.groups)

    def unready(self, index: int) -> None:
        self.groups[index].ready = False

    def delete(self, start: int, end: int) -> None:
        for i in range(start, end):
            del self.groups[i]

    def delete_above_replicas(self) -> None:
        self.delete(self.replicas, max(self.groups) + 1)

    # --- what upstream's test checks ---

    def sts_shape(self) -> tuple[int, int]:
        assert self.sts is not None
        spec = self.sts["spec"]
        return spec["replicas"], spec["updateStrategy"]["rollingUpdate"]["partition"]

    def counts(self) -> tuple[int, int]:
        status = self.lws["status"]
        # Absent counts are 0: the status omits them, as Go's omitempty does.
        return status.get("readyReplicas", 0), status.get("updatedReplicas", 0)

    def true_conditions(self) -> set[str]:
        return {cond["type"] for cond in self.lws["status"].get("conditions", []) if cond["status"] == "True"}


Action = Callable[[EnvWorld], None]
AVAILABLE = frozenset({c.CONDITION_AVAILABLE})
UPDATING = frozenset({c.CONDITION_PROGRESSING, c.CONDITION_UPDATE_IN_PROGRESS})


@dataclass(frozen=True)
class Step:
    name: str
    actions: tuple[Action, ...]
    want_sts: tuple[int, int]  # (replicas, partition)
    want_counts: tuple[int, int] | None = None  # (readyReplicas, updatedReplicas)
    want_true: frozenset[str] | None = None  # conditions that are True


def ready_all() -> Action:
    return lambda w: w.all_ready()


def template(revision: str) -> Action:
    return lambda w: w.update_template(revision)


def replicas(n: int) -> Action:
    return lambda w: w.set_replicas(n)


def create(start: int, end: int, revision: str) -> Action:
    return lambda w: w.create(start, end, revision)


def ready(*indexes: int) -> Action:
    return lambda w: w.group_ready(*indexes)


def unready(index: int) -> Action:
    return lambda w: w.unready(index)


def delete(start: int, end: int) -> Action:
    return lambda w: w.delete(start, end)


def user_partition(n: int) -> Action:
    return lambda w: w.lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].update(partition=n)


def resize(n: int, revision: str) -> Action:
    def act(w: EnvWorld) -> None:
        w.lws["spec"]["leaderWorkerTemplate"]["size"] = n
        w.update_template(revision)

    return act


def delete_above_replicas() -> Action:
    return lambda w: w.delete_above_replicas()


def available(replicas_: int, partition: int = 0) -> Step:
    return Step("set to available", (ready_all(),), (replicas_, partition), (replicas_, replicas_), AVAILABLE)


@dataclass(frozen=True)
class Replay:
    lws: LeaderWorkerSetBuilder
    steps: list[Step]


REPLAYS = [
    pytest.param(
        Replay(
            cached_lws().replicas(4),
            [
                available(4),
                Step("leader template changed", (template("rev2"),), (4, 3), (4, 0), UPDATING),
                Step("group 3 updated", (ready(3),), (4, 2), (4, 1), UPDATING),
                Step("group 1 updated below the partition", (ready(1),), (4, 2), (4, 2), UPDATING),
                Step(
                    "group 3 unready does not move the partition back",
                    (unready(3),),
                    (4, 2),
                    (3, 2),
                    UPDATING,
                ),
                Step("all groups updated", (ready_all(),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="leaderTemplate changed with default strategy",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_unavailable(2),
            [
                available(4),
                Step("worker template changed", (template("rev2"),), (4, 2), (4, 0), UPDATING),
                Step("group 3 updated", (ready(3),), (4, 1), (4, 1), UPDATING),
                Step("group 2 updated", (ready(2),), (4, 0), (4, 2), UPDATING),
                Step("the rest updated", (ready(1, 0),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="workerTemplate changed with maxUnavailable=2",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_unavailable(10),
            [
                available(4),
                Step("worker template changed", (template("rev2"),), (4, 0), (4, 0), UPDATING),
                Step("all updated", (ready_all(),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="workerTemplate changed with maxUnavailable greater than replicas",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4),
            [
                available(4),
                Step(
                    "template and replicas changed",
                    (template("rev2"), replicas(6), create(4, 6, "rev1")),
                    (6, 4),
                    (4, 0),
                    UPDATING,
                ),
                Step("all ready", (ready_all(),), (6, 0), (6, 6), AVAILABLE),
            ],
        ),
        id="rolling update with both worker template and number of replicas changed",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4),
            [
                available(4),
                Step("worker template changed", (template("rev2"),), (4, 3), (4, 0), UPDATING),
                Step("group 3 updated", (ready(3),), (4, 2), (4, 1), UPDATING),
                Step(
                    "replicas increased mid rollout",
                    (replicas(6), create(4, 6, "rev2"), ready(4, 5)),
                    (6, 2),
                    (6, 3),
                    UPDATING,
                ),
                Step("all ready", (ready_all(),), (6, 0), (6, 6), AVAILABLE),
            ],
        ),
        id="replicas increases during rolling update",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(6),
            [
                available(6),
                Step("worker template changed", (template("rev2"),), (6, 5), (6, 0), UPDATING),
                Step(
                    "replicas decreased mid rollout",
                    (replicas(3), delete_above_replicas()),
                    (3, 2),
                    (3, 0),
                    UPDATING,
                ),
                Step("all ready", (ready_all(),), (3, 0), (3, 3), AVAILABLE),
            ],
        ),
        id="replicas decreases during rolling update",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_unavailable(0).max_surge(1),
            [
                available(4),
                Step(
                    "worker template changed",
                    (template("rev2"), create(4, 5, "rev1")),
                    (5, 4),
                    (4, 0),
                    UPDATING,
                ),
                Step("group 4 updated", (ready(4),), (5, 3), (5, 1), UPDATING),
                Step("group 3 updated", (ready(3),), (5, 2), (5, 2), UPDATING),
                Step("group 2 updated", (ready(2),), (5, 1), (5, 3), UPDATING),
                Step("group 1 updated", (ready(1),), (5, 0), (5, 4), UPDATING),
                Step("group 0 updated, surge reclaimed", (ready(0), delete(4, 5)), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="rolling update with maxUnavailable zero and maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_surge(1),
            [
                available(4),
                Step(
                    "worker template changed",
                    (template("rev2"), create(4, 5, "rev1")),
                    (5, 3),
                    (4, 0),
                    UPDATING,
                ),
                Step("group 4 updated", (ready(4),), (5, 2), (5, 1), UPDATING),
                Step("group 3 updated", (ready(3),), (5, 1), (5, 2), UPDATING),
                Step("group 2 updated", (ready(2),), (5, 0), (5, 3), UPDATING),
                Step("group 1 updated, surge reclaimed", (ready(1), delete(4, 5)), (4, 0), (4, 3), UPDATING),
                Step("group 0 updated", (ready(0),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="rolling update with maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_surge(2).max_unavailable(2),
            [
                available(4),
                Step(
                    "worker template changed",
                    (template("rev2"), create(4, 6, "rev1")),
                    (6, 2),
                    (4, 0),
                    UPDATING,
                ),
                Step(
                    "groups 3 and 2 updated, surge reclaimed",
                    (ready(3, 2), delete(4, 6)),
                    (4, 0),
                    (4, 2),
                    UPDATING,
                ),
                Step("groups 1 and 0 updated", (ready(1, 0),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="rolling update with maxUnavailable and maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(2).max_surge(2),
            [
                available(2),
                Step(
                    "template changed and scaled up",
                    (template("rev2"), replicas(4), create(2, 6, "rev1")),
                    (6, 2),
                    None,
                    UPDATING,
                ),
                Step("all ready", (ready_all(),), (4, 0), None, AVAILABLE),
                Step("surge pods deleted", (delete_above_replicas(),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="rolling update with replicas scaled up and maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(6).max_surge(2),
            [
                available(6),
                Step(
                    "template changed and scaled down",
                    (template("rev2"), replicas(3)),
                    (5, 2),
                    None,
                    UPDATING,
                ),
                Step("all ready", (delete(5, 6), ready_all()), (3, 0), None, AVAILABLE),
                Step("surge pods deleted", (delete_above_replicas(),), (3, 0), (3, 3), AVAILABLE),
            ],
        ),
        id="rolling update with replicas scaled down and maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(2).max_surge(4),
            [
                available(2),
                Step(
                    "worker template changed",
                    (template("rev2"), create(2, 3, "rev1")),
                    (3, 1),
                    None,
                    UPDATING,
                ),
                Step("all ready", (ready_all(),), (2, 0), None, AVAILABLE),
                Step("surge pods deleted", (delete_above_replicas(),), (2, 0), (2, 2), AVAILABLE),
            ],
        ),
        id="rolling update with maxSurge greater than replicas",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_surge(2),
            [
                available(4),
                Step(
                    "worker template changed",
                    (template("rev2"), create(4, 6, "rev1")),
                    (6, 3),
                    (4, 0),
                    UPDATING,
                ),
                Step("scaled up mid rollout", (replicas(6), create(6, 8, "rev2")), (8, 3), (4, 2), UPDATING),
                Step("last two updated", (ready(7, 6),), (8, 3), (6, 2), UPDATING),
                Step(
                    "scaled down mid rollout",
                    (replicas(2), delete(4, 8), delete(3, 4)),
                    (3, 1),
                    (3, 0),
                    UPDATING,
                ),
                Step("group 2 updated", (ready(2),), (3, 0), (3, 1), UPDATING),
                Step("group 1 updated, surge reclaimed", (ready(1), delete(2, 3)), (2, 0), (2, 1), UPDATING),
                Step("group 0 updated", (ready(0),), (2, 0), (2, 2), AVAILABLE),
            ],
        ),
        id="scale up and down during rolling update with maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_surge(2),
            [
                available(4),
                Step(
                    "worker template changed",
                    (template("rev2"), create(4, 6, "rev1")),
                    (6, 3),
                    (4, 0),
                    UPDATING,
                ),
                Step("last two updated", (ready(5, 4),), (6, 1), (6, 2), UPDATING),
                Step("worker template changed again", (template("rev3"),), (6, 3), (6, 0), UPDATING),
                Step("all ready", (ready_all(),), (4, 0), None, AVAILABLE),
                Step("surge pods deleted", (delete_above_replicas(),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="multiple rolling update with maxSurge set",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(4).max_unavailable(2),
            [
                available(4),
                Step("group 1 unready", (unready(1),), (4, 0), (3, 4), frozenset({c.CONDITION_PROGRESSING})),
                # With one group already down, moving the partition to 2 would make 3 unavailable.
                Step("worker template changed", (template("rev2"),), (4, 3), (3, 0), UPDATING),
                Step("all ready", (ready_all(),), (4, 0), (4, 4), AVAILABLE),
            ],
        ),
        id="rolling update with unhealthy pods below partition",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(2).max_unavailable(1),
            [
                available(2),
                Step("group 0 unready", (unready(0),), (2, 0)),
                Step("group 1 unready", (unready(1),), (2, 0)),
                Step("worker template changed", (template("rev2"),), (2, 1), (0, 0), UPDATING),
                Step("group 1 ready", (ready(1),), (2, 0)),
                Step("group 0 ready", (ready(0),), (2, 0), (2, 2), AVAILABLE),
            ],
        ),
        id="rolling update with no ready replicas",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(2),
            [
                available(2),
                Step(
                    "size changed to 4 and groups replaced",
                    (resize(4, "rev2"), ready_all()),
                    (2, 0),
                    (2, 2),
                    AVAILABLE,
                ),
            ],
        ),
        id="resize should update the size of the replicas",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(6).partition(4),
            [
                available(6, partition=4),
                Step("worker template changed", (template("rev2"),), (6, 5), (6, 0), UPDATING),
                Step("group 5 updated", (ready(5),), (6, 4), (6, 1), UPDATING),
                Step("group 4 updated: done down to the partition", (ready(4),), (6, 4), (6, 2), AVAILABLE),
                Step("user partition lowered to 2", (user_partition(2),), (6, 3), (6, 2), UPDATING),
                Step("group 3 updated", (ready(3),), (6, 2), (6, 3), UPDATING),
                Step("group 2 updated", (ready(2),), (6, 2), (6, 4), AVAILABLE),
            ],
        ),
        id="rolling update with the partition setting",
    ),
    pytest.param(
        Replay(
            cached_lws().replicas(3).max_surge(1).partition(2),
            [
                available(3, partition=2),
                Step("worker template changed", (template("rev2"),), (4, 2), (3, 0), UPDATING),
                # The surge group stays: the outdated groups below the partition exceed maxUnavailable.
                Step(
                    "surge and group 2 updated",
                    (create(3, 4, "rev2"), ready(3, 2)),
                    (4, 2),
                    (4, 2),
                    AVAILABLE,
                ),
                Step("user partition reset to 0", (user_partition(0),), (4, 0), (4, 2), UPDATING),
                Step("groups 1 and 0 updated", (ready(1, 0),), (3, 0), (4, 4), AVAILABLE),
                Step("surge pod deleted", (delete(3, 4),), (3, 0), (3, 3), AVAILABLE),
            ],
        ),
        id="rolling update with the partition and maxSurge setting",
    ),
]


@pytest.mark.parametrize("replay", REPLAYS)
def test_upstream_integration_replay(replay: Replay) -> None:
    world = EnvWorld(replay.lws.size(2).obj())
    world.settle()
    world.create(0, world.replicas, world.revision)
    world.settle()
    for step in replay.steps:
        for action in step.actions:
            action(world)
        world.settle()
        assert world.sts_shape() == step.want_sts, step.name
        if step.want_counts is not None:
            assert world.counts() == step.want_counts, step.name
        if step.want_true is not None:
            assert world.true_conditions() == step.want_true, step.name
