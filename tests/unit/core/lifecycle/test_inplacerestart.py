"""core/lifecycle/inplacerestart: which restarts are failures, the epoch bookkeeping, the fallback bound, the
annotation's rule and what the webhook adds to a pod."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import pytest

from leaderworkerset import agent
from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.lifecycle.inplacerestart import InPlaceRestartState, InPlaceRestartStep, PodRestart
from tests.support.builders import cached_lws
from tests.support.builders.pod import PodBuilder, pod

ALL = {"terminated": {"exitCode": 137, "reason": "RestartingAllContainers"}}


def restarted(name: str, *counts: int, seen: int | None = None, ordered: int | None = None) -> PodBuilder:
    """A pod whose containers restarted `counts` times, with the controller's bookkeeping."""
    builder = pod(name).uid(f"uid-{name}")
    for index, count in enumerate(counts):
        builder.container_status(f"c{index}", restarts=count, last_state=ALL if count else None)
    if seen is not None:
        builder.annotation(ext.ANNOTATION_RESTARTS_SEEN, str(seen))
    if ordered is not None:
        builder.annotation(ext.ANNOTATION_RESTART_ORDERED, str(ordered))
    return builder


@dataclass(frozen=True)
class ClassifyCase:
    pod: PodBuilder
    want: PodRestart


CLASSIFY_CASES = [
    pytest.param(ClassifyCase(restarted("p"), PodRestart.NONE), id="no status yet"),
    pytest.param(ClassifyCase(restarted("p", 0, 0), PodRestart.NONE), id="never restarted"),
    pytest.param(ClassifyCase(restarted("p", 1, 1), PodRestart.FAILURE), id="first restart, nothing ordered"),
    pytest.param(ClassifyCase(restarted("p", 1, 1, seen=1), PodRestart.NONE), id="accounted already"),
    pytest.param(ClassifyCase(restarted("p", 2, 2, seen=1), PodRestart.FAILURE), id="a second failure"),
    pytest.param(
        ClassifyCase(restarted("p", 1, 1, seen=0, ordered=1), PodRestart.ORDERED), id="the ordered one"
    ),
    pytest.param(
        ClassifyCase(restarted("p", 0, 0, seen=0, ordered=1), PodRestart.NONE), id="ordered, not yet"
    ),
    # A restart-all raises every container by one, not always in the same status update: the highest
    # count rises once.
    pytest.param(
        ClassifyCase(restarted("p", 2, 1, seen=1), PodRestart.FAILURE), id="half reported rises once"
    ),
    pytest.param(ClassifyCase(restarted("p", 2, 2, seen=2), PodRestart.NONE), id="other half adds nothing"),
    pytest.param(
        ClassifyCase(restarted("p", 1).annotation(ext.ANNOTATION_RESTARTS_SEEN, "x"), PodRestart.FAILURE),
        id="unreadable bookkeeping counts from zero",
    ),
]


def test_classify_table_size() -> None:
    assert len(CLASSIFY_CASES) == 10


@pytest.mark.parametrize("case", CLASSIFY_CASES)
def test_classify(case: ClassifyCase) -> None:
    assert inplacerestart.classify_pod_restart(case.pod.obj()) is case.want


def test_init_container_restarts_count() -> None:
    p = pod("p").obj()
    p["status"] = {"initContainerStatuses": [{"name": "agent", "restartCount": 3}], "containerStatuses": []}
    assert inplacerestart.pod_restarts(p) == 3


@dataclass(frozen=True)
class DecideCase:
    state: InPlaceRestartState
    failure: str
    now: float
    budget_count: int | None
    want: InPlaceRestartStep
    want_epoch: int
    want_streak: int


NOW = 10_000.0
CLAIMED = InPlaceRestartState(
    epoch=4, streak=2, last=NOW - 5, failure="uid-a/3", origin="a", count=4, settled=True
)
RESTARTING = InPlaceRestartState(
    epoch=4, streak=1, last=NOW - 5, failure="uid-a/3", origin="a"
)  # not settled yet
DECIDE_CASES = [
    pytest.param(
        DecideCase(InPlaceRestartState(), "uid-a/1", NOW, None, InPlaceRestartStep.RESTART, 1, 1),
        id="first failure",
    ),
    pytest.param(
        DecideCase(InPlaceRestartState(), "uid-a/1", NOW, 1, InPlaceRestartStep.RESTART, 1, 1),
        id="first, with a budget",
    ),
    pytest.param(
        DecideCase(CLAIMED, "uid-a/3", NOW, None, InPlaceRestartStep.FINISH, 4, 2), id="a retry finishes"
    ),
    pytest.param(
        DecideCase(CLAIMED, "uid-b/1", NOW, None, InPlaceRestartStep.RESTART, 5, 3), id="third in a row"
    ),
    pytest.param(
        DecideCase(
            InPlaceRestartState(4, 3, NOW - 5, "uid-b/1", settled=True),
            "uid-a/4",
            NOW,
            None,
            InPlaceRestartStep.RECREATE,
            4,
            3,
        ),
        id="fourth in a row falls back",
    ),
    pytest.param(
        DecideCase(
            InPlaceRestartState(4, 3, NOW - 600, "uid-b/1", settled=True),
            "uid-a/4",
            NOW,
            None,
            InPlaceRestartStep.RESTART,
            5,
            1,
        ),
        id="healthy for the reset window: a new streak",
    ),
    pytest.param(
        DecideCase(
            InPlaceRestartState(4, 3, NOW - 599, "uid-b/1", settled=True),
            "uid-a/4",
            NOW,
            None,
            InPlaceRestartStep.RECREATE,
            4,
            3,
        ),
        id="just inside the window",
    ),
    pytest.param(
        DecideCase(RESTARTING, "uid-a/3", NOW, None, InPlaceRestartStep.FINISH, 4, 1),
        id="restarting: a retry",
    ),
    pytest.param(
        DecideCase(RESTARTING, "uid-b/1", NOW, None, InPlaceRestartStep.ABSORB, 4, 1),
        id="restarting: absorbed",
    ),
    pytest.param(
        DecideCase(
            replace(RESTARTING, absorbed=1, absorbed_failure="uid-b/1"),
            "uid-b/1",
            NOW,
            None,
            InPlaceRestartStep.ABSORB,
            4,
            1,
        ),
        id="restarting: absorbed already (a retry)",
    ),
    pytest.param(
        DecideCase(replace(RESTARTING, absorbed=3), "uid-b/2", NOW, None, InPlaceRestartStep.RESTART, 5, 2),
        id="restarting: one per pod absorbed, the next is a failure",
    ),
    pytest.param(
        DecideCase(
            replace(RESTARTING, streak=3, absorbed=3), "uid-b/2", NOW, None, InPlaceRestartStep.RECREATE, 4, 3
        ),
        id="a group crash-looping while it restarts still falls back",
    ),
]


def test_decide_table_size() -> None:
    assert len(DECIDE_CASES) == 12


@pytest.mark.parametrize("case", DECIDE_CASES)
def test_decide(case: DecideCase) -> None:
    got = inplacerestart.decide_in_place_restart(
        case.state, case.failure, "a", now=case.now, budget_count=case.budget_count, group_size=3
    )
    assert (got.step, got.state.epoch, got.state.streak) == (case.want, case.want_epoch, case.want_streak)
    if case.want is InPlaceRestartStep.RESTART:
        assert (got.state.failure, got.state.last, got.state.count) == (case.failure, NOW, case.budget_count)
        assert (got.state.settled, got.state.absorbed) == (False, 0)  # a new restart starts unsettled
    if case.want is InPlaceRestartStep.ABSORB:
        assert (got.state.absorbed, got.state.absorbed_failure) == (max(case.state.absorbed, 1), case.failure)


def _ready(name: str, *counts: int, seen: int, ordered: int | None = None) -> PodBuilder:
    return restarted(name, *counts, seen=seen, ordered=ordered).condition("Ready")


SETTLE_CASES = [
    pytest.param(
        RESTARTING, [_ready("a", 1, seen=1), _ready("b", 1, seen=1)], True, id="all Ready, accounted"
    ),
    pytest.param(
        replace(RESTARTING, settled=True),
        [_ready("a", 1, seen=1), _ready("b", 1, seen=1)],
        False,
        id="settled already",
    ),
    pytest.param(
        InPlaceRestartState(), [_ready("a", 0, seen=0), _ready("b", 0, seen=0)], False, id="never restarted"
    ),
    pytest.param(RESTARTING, [_ready("a", 1, seen=1), restarted("b", 1, seen=1)], False, id="one not Ready"),
    pytest.param(
        RESTARTING,
        [_ready("a", 1, seen=1), _ready("b", 0, seen=0, ordered=4)],
        False,
        id="an ordered restart pending",
    ),
    pytest.param(
        RESTARTING, [_ready("a", 1, seen=1), _ready("b", 2, seen=1)], False, id="a restart unaccounted"
    ),
    pytest.param(RESTARTING, [_ready("a", 1, seen=1)], False, id="a pod missing"),
]


def test_settle_table_size() -> None:
    assert len(SETTLE_CASES) == 7


@pytest.mark.parametrize(("state", "pods", "want"), SETTLE_CASES)
def test_settles(state: InPlaceRestartState, pods: list[PodBuilder], want: bool) -> None:
    assert inplacerestart.settles(state, [p.obj() for p in pods], 2) is want


def test_group_state_round_trips_through_the_leader_and_claims_conditionally() -> None:
    leader = pod("lead").obj()
    leader["metadata"]["resourceVersion"] = "42"
    patch = inplacerestart.state_patch(leader, CLAIMED)
    assert patch["metadata"]["resourceVersion"] == "42"
    leader["metadata"]["annotations"] = patch["metadata"]["annotations"]
    assert inplacerestart.in_place_restart_state(leader) == CLAIMED


@pytest.mark.parametrize("raw", ["", "{", "[]", '{"epoch": "x"}'])
def test_an_unreadable_state_is_a_fresh_start(raw: str) -> None:
    assert (
        inplacerestart.in_place_restart_state(
            pod("lead").annotation(ext.ANNOTATION_IN_PLACE_RESTARTS, raw).obj()
        )
        == InPlaceRestartState()
    )


def test_the_failed_pod_learns_the_epoch_and_is_accounted_others_are_ordered() -> None:
    failed = restarted("a", 1, 1).obj()
    other = restarted("b", 0, 0).obj()
    mine = inplacerestart.order_patch(failed, 5, "a")
    theirs = inplacerestart.order_patch(other, 5, "a")
    epoch, seen, ordered = (
        ext.ANNOTATION_RESTART_EPOCH,
        ext.ANNOTATION_RESTARTS_SEEN,
        ext.ANNOTATION_RESTART_ORDERED,
    )
    assert mine == {"metadata": {"annotations": {epoch: "5 a", seen: "1", ordered: None}}}
    assert theirs == {"metadata": {"annotations": {epoch: "5 a", seen: "0", ordered: "5"}}}
    other["metadata"]["annotations"] = {
        k: v for k, v in theirs["metadata"]["annotations"].items() if v is not None
    }
    assert inplacerestart.order_patch(other, 5, "a") is None  # a retry writes nothing
    # The ordered restart happens: accounted, then nothing new.
    other["status"]["containerStatuses"][0]["restartCount"] = 1
    assert inplacerestart.classify_pod_restart(other) is PodRestart.ORDERED
    other["metadata"]["annotations"].update(inplacerestart.seen_patch(other)["metadata"]["annotations"])
    other["metadata"]["annotations"] = {
        k: v for k, v in other["metadata"]["annotations"].items() if v is not None
    }
    assert inplacerestart.classify_pod_restart(other) is PodRestart.NONE


@dataclass(frozen=True)
class RuleCase:
    value: str
    policy: str | None
    want: str | None


RULE_CASES = [
    pytest.param(RuleCase("InPlace", c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART, None), id="valid"),
    pytest.param(
        RuleCase("inplace", c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART, "must be 'InPlace'"), id="case"
    ),
    pytest.param(
        RuleCase("", c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART, "must be 'InPlace'"), id="empty"
    ),
    pytest.param(
        RuleCase("InPlace", "None", "needs spec.leaderWorkerTemplate.restartPolicy"), id="policy None"
    ),
    pytest.param(
        RuleCase("InPlace", c.RESTART_POLICY_RECREATE_GROUP_AFTER_START, "needs spec.leaderWorkerTemplate"),
        id="after start is not supported",
    ),
]


def test_rule_table_size() -> None:
    assert len(RULE_CASES) == 5


@pytest.mark.parametrize("case", RULE_CASES)
def test_strategy_rule(case: RuleCase) -> None:
    lws = (
        cached_lws().restart_policy(case.policy).annotation(ext.ANNOTATION_RESTART_STRATEGY, case.value).obj()
    )
    problem = inplacerestart.restart_strategy_problem(case.value, lws)
    if case.want is None:
        assert problem is None
        assert inplacerestart.wants_in_place_restart(lws)
    else:
        assert problem is not None
        assert problem.startswith(case.want)
        assert not inplacerestart.wants_in_place_restart(lws)


def test_equip_adds_rules_the_agent_and_its_volume_once() -> None:
    p = {
        "metadata": {"name": "w"},
        "spec": {
            "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}],
            "containers": [
                {"name": "main"},
                {
                    "name": "own",
                    "restartPolicy": "Never",
                    "restartPolicyRules": [
                        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}},
                    ],
                },
            ],
        },
    }
    inplacerestart.equip_pod(p, "img:v1")
    inplacerestart.equip_pod(p, "img:v1")  # idempotent
    init = p["spec"]["initContainers"]
    assert [ctr["name"] for ctr in init] == [inplacerestart.AGENT_CONTAINER, "setup", "proxy"]
    assert init[0]["image"] == "img:v1"
    assert init[0]["restartPolicy"] == "Always"
    assert init[0]["restartPolicyRules"][0]["exitCodes"]["values"] == [agent.EXIT_RESTART]
    assert "restartPolicyRules" not in init[1]  # run to completion: runs again anyway
    assert [r["action"] for r in init[2]["restartPolicyRules"]] == ["RestartAllContainers"]
    main, own = p["spec"]["containers"]
    assert main["restartPolicy"] == "Always"
    assert len(main["restartPolicyRules"]) == 1
    assert own["restartPolicy"] == "Never"  # the user's policy and first rule stay first
    assert [r["action"] for r in own["restartPolicyRules"]] == ["Restart", "RestartAllContainers"]
    assert [v["name"] for v in p["spec"]["volumes"]] == [inplacerestart.AGENT_VOLUME]
    assert inplacerestart.equipped(p)
    assert inplacerestart.unequipped([p, {"metadata": {"name": "x"}}]) == ["x"]
    field = p["spec"]["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"]
    assert field == f"metadata.annotations['{ext.ANNOTATION_RESTART_EPOCH}']"
    json.dumps(p)  # stays JSON


def test_agent_exit_code_is_the_rule_s() -> None:
    assert agent.EXIT_RESTART == inplacerestart.AGENT_EXIT_CODE


# --- the prerequisites a valid InPlace annotation still needs ---------------------------------------

UNSUPPORTED = inplacerestart.Prerequisites(unsupported="the API server drops container restart rules")
NO_AGENT = inplacerestart.Prerequisites(agent_image=False)


def in_place_set(
    strategy: str | None = inplacerestart.IN_PLACE, policy: str | None = None
) -> dict[str, object]:
    builder = cached_lws().restart_policy(policy or c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
    if strategy is not None:
        builder.annotation(ext.ANNOTATION_RESTART_STRATEGY, strategy)
    return builder.obj()


@pytest.mark.parametrize(
    ("lws", "prerequisites", "reason"),
    [
        (in_place_set(), inplacerestart.Prerequisites(), None),
        (in_place_set(), UNSUPPORTED, ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED),
        (in_place_set(), NO_AGENT, ext.REASON_NO_RESTART_AGENT_IMAGE),
        # the cluster is what the set cannot change: said first
        (
            in_place_set(),
            replace(UNSUPPORTED, agent_image=False),
            ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED,
        ),
        (in_place_set(strategy=None), UNSUPPORTED, None),  # does not ask
        (in_place_set(strategy="Recreate"), UNSUPPORTED, None),  # an invalid value: its own condition
        (in_place_set(policy=c.RESTART_POLICY_NONE), NO_AGENT, None),
    ],
)
def test_an_in_place_set_is_told_what_stands_in_the_way(
    lws: dict[str, object], prerequisites: inplacerestart.Prerequisites, reason: str | None
) -> None:
    found = inplacerestart.unavailable(lws, prerequisites)
    assert (found[0] if found else None) == reason
    if found is not None:
        assert found[1].endswith("failed groups are recreated")
