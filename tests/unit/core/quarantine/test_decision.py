"""core/quarantine/decision: which nodes a set quarantines, from its ledger, the clock and its nodes."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

import pytest

from leaderworkerset.core.conditions import format_time_ms
from leaderworkerset.core.lifecycle.ledger import Action, Cause, LedgerEntry, Trigger
from leaderworkerset.core.quarantine.decision import (
    Quarantine,
    active_nodes,
    decide_quarantine,
    decode_state,
    encode_state,
    failures_by_node,
    next_release_in,
    quarantine_limit,
    schedulable_nodes,
)
from leaderworkerset.core.quarantine.policy import QuarantinePolicy
from tests.support.builders import NodeBuilder, lws

NOW = 1_800_000_000.0
POLICY = QuarantinePolicy(failures=2, window=600, cooldown=900)
SIX = ("n0", "n1", "n2", "n3", "n4", "n5")


def _at(offset: float) -> str:
    return format_time_ms(datetime.datetime.fromtimestamp(NOW + offset, datetime.UTC))


def _failure(
    node: str,
    ago: float,
    *,
    group: str = "0",
    uid: str | None = None,
    cause: Cause = Cause.EXIT_CODE,
    action: Action = Action.RECREATED,
) -> LedgerEntry:
    trigger = Trigger(cause, f"set-{group}-1", "worker", 137, node)
    return LedgerEntry(_at(-ago), group, action, trigger, uid if uid is not None else f"{node}-{ago}")


def _held(node: str, *, until: float) -> Quarantine:
    return Quarantine(node, _at(until - 300), _at(until))


@dataclass(frozen=True)
class Case:
    entries: tuple[LedgerEntry, ...]
    current: tuple[Quarantine, ...] = ()
    schedulable: tuple[str, ...] = SIX
    want_added: tuple[str, ...] = ()
    want_kept: tuple[str, ...] = ()
    want_released: tuple[str, ...] = ()
    want_held_back: tuple[str, ...] = ()
    policy: QuarantinePolicy = field(default=POLICY)


CASES = [
    pytest.param(Case(()), id="no failures: nothing"),
    pytest.param(Case((_failure("n1", 10),)), id="one failure is below the threshold"),
    pytest.param(Case((_failure("n1", 10), _failure("n1", 20)), want_added=("n1",)), id="threshold reached"),
    pytest.param(
        Case((_failure("n1", 10), _failure("n1", 700))), id="the older failure is outside the window"
    ),
    pytest.param(
        Case((_failure("n1", 10), _failure("n2", 20))), id="failures on different nodes do not add up"
    ),
    pytest.param(
        Case((_failure("n1", 10, uid="a"), _failure("n1", 20, uid="a", action=Action.BACKING_OFF))),
        id="a back-off wait and its recreation are one failure",
    ),
    pytest.param(
        Case((_failure("n1", 10, cause=Cause.EVICTION), _failure("n1", 20, cause=Cause.PREEMPTION))),
        id="evictions and preemptions do not implicate a node",
    ),
    pytest.param(
        Case((_failure("n1", 10, cause=Cause.DELETION), _failure("n1", 20, cause=Cause.DELETION))),
        id="plain deletions do not implicate a node",
    ),
    pytest.param(
        Case(
            (_failure("n1", 10, cause=Cause.OOM_KILLED), _failure("n1", 20, cause=Cause.NODE_NOT_READY)),
            want_added=("n1",),
        ),
        id="an OOM kill and a node going not ready do",
    ),
    pytest.param(
        Case((_failure("n1", 10, group="0"), _failure("n1", 20, group="1")), want_added=("n1",)),
        id="failures of different groups on one node add up",
    ),
    pytest.param(
        Case((_failure("gone", 10), _failure("gone", 20))), id="a node the set cannot use is not quarantined"
    ),
    pytest.param(
        Case((_failure("n1", 10), _failure("n1", 20)), (_held("n1", until=100),), want_kept=("n1",)),
        id="a quarantine in force is neither repeated nor extended",
    ),
    pytest.param(
        Case((), (_held("n1", until=-1),), want_released=("n1",)), id="the cool-down is over: released"
    ),
    pytest.param(
        Case(
            (_failure("n1", 10), _failure("n1", 20)),
            (_held("n1", until=0),),
            want_added=("n1",),
            want_released=("n1",),
        ),
        id="released and quarantined again when it still qualifies",
    ),
    pytest.param(
        Case(
            (*(_failure("n1", t) for t in (1, 2, 3)), *(_failure("n2", t) for t in (4, 5, 6, 7))),
            schedulable=("n0", "n1", "n2"),
            want_added=("n2",),
            want_held_back=("n1",),
        ),
        id="three nodes: one at most, the one with most failures",
    ),
    pytest.param(
        Case(
            (_failure("n1", 50), _failure("n1", 60), _failure("n2", 5), _failure("n2", 70)),
            schedulable=("n0", "n1", "n2"),
            want_added=("n2",),
            want_held_back=("n1",),
        ),
        id="a tie on failures: the most recent failure wins",
    ),
    pytest.param(
        Case(
            (_failure("n1", 10), _failure("n1", 20), _failure("n2", 10), _failure("n2", 20)),
            schedulable=("n0", "n1", "n2"),
            want_added=("n1",),
            want_held_back=("n2",),
        ),
        id="a full tie: the name decides",
    ),
    pytest.param(
        Case(
            tuple(_failure(node, t) for node in ("n1", "n2", "n3") for t in (1, 2)),
            want_added=("n1", "n2"),
            want_held_back=("n3",),
        ),
        id="six nodes: two at most",
    ),
    pytest.param(
        Case(
            (_failure("n2", 1), _failure("n2", 2)),
            (_held("n1", until=100),),
            schedulable=("n0", "n1", "n2"),
            want_kept=("n1",),
            want_held_back=("n2",),
        ),
        id="the limit counts the quarantines in force",
    ),
    pytest.param(
        Case((_failure("n1", 1), _failure("n1", 2)), schedulable=("n0", "n1"), want_added=("n1",)),
        id="two nodes: one may go",
    ),
    pytest.param(
        Case((_failure("n1", 1), _failure("n1", 2)), schedulable=("n1",), want_held_back=("n1",)),
        id="never the last node",
    ),
    pytest.param(
        Case((_failure("n1", 1),), policy=QuarantinePolicy(1, 60, 60), want_added=("n1",)),
        id="a threshold of one",
    ),
]


def test_table_size() -> None:
    assert len(CASES) == 22


@pytest.mark.parametrize("case", CASES)
def test_decide_quarantine(case: Case) -> None:
    decision = decide_quarantine(
        case.policy, case.entries, case.current, now=NOW, schedulable=case.schedulable
    )
    assert tuple(q.node for q in decision.added) == case.want_added
    assert tuple(q.node for q in decision.kept) == case.want_kept
    assert tuple(q.node for q in decision.released) == case.want_released
    assert tuple(decision.held_back) == case.want_held_back
    assert decision.changed == bool(case.want_added or case.want_released)
    for q in decision.added:
        assert (q.since, q.until) == (_at(0), _at(case.policy.cooldown))
        assert len(q.failures) >= case.policy.failures
        assert {e.time for e in q.failures} <= {e.time for e in case.entries}


@pytest.mark.parametrize(
    ("schedulable", "want"),
    [(0, 0), (1, 0), (2, 1), (3, 1), (5, 1), (6, 2), (9, 3), (100, 33)],
    ids=lambda v: str(v),
)
def test_quarantine_limit(schedulable: int, want: int) -> None:
    assert quarantine_limit(schedulable) == want


def test_the_evidence_is_per_node_oldest_first_and_counts_each_incarnation_once() -> None:
    entries = [
        _failure("n1", 30, uid="a", action=Action.BACKING_OFF),
        _failure("n1", 20, uid="a"),
        _failure("n1", 10, uid="b", group="1"),
        _failure("", 5),
    ]
    found = failures_by_node(entries, since=NOW - 600)
    assert list(found) == ["n1"]
    assert [(e.time, e.group, e.cause) for e in found["n1"]] == [
        (_at(-30), "0", "exit-code"),
        (_at(-10), "1", "exit-code"),
    ]


def test_the_state_round_trips_and_only_quarantines_in_force_are_active() -> None:
    decision = decide_quarantine(
        POLICY, [_failure("n1", 1), _failure("n1", 2)], [_held("n2", until=10)], now=NOW, schedulable=SIX
    )
    raw = encode_state(decision.state)
    assert raw is not None
    assert decode_state(raw) == decision.state
    assert active_nodes(raw, NOW) == {"n1", "n2"}
    assert active_nodes(raw, NOW + 10) == {"n1"}
    assert active_nodes(raw, NOW + 900) == frozenset()
    assert next_release_in(decision.state, NOW) == 10
    assert encode_state([]) is None
    for unreadable in ("not json", '{"a": 1}', '[{"x": 1}]'):
        assert decode_state(unreadable) == []


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param(None, ["a", "b-gpu"], id="no nodeSelector: every uncordoned node"),
        pytest.param({"gpu": "true"}, ["b-gpu"], id="a nodeSelector narrows the pool"),
    ],
)
def test_schedulable_nodes(selector: dict[str, str] | None, want: list[str]) -> None:
    nodes = [
        NodeBuilder("a").obj(),
        NodeBuilder("b-gpu").label("gpu", "true").obj(),
        {**NodeBuilder("cordoned").label("gpu", "true").obj(), "spec": {"unschedulable": True}},
    ]
    obj = lws().obj()
    if selector is not None:
        obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"] = selector
    assert schedulable_nodes(obj, nodes) == want
