"""The events a node-quarantine decision announces on the LeaderWorkerSet."""

from __future__ import annotations

from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.quarantine.writes import decision_events
from leaderworkerset.core.quarantine.decision import Evidence, Quarantine, QuarantineDecision

FAILURES = (
    Evidence("2026-12-04T03:58:00.000Z", "0", "vllm-0-1", "exit-code"),
    Evidence("2026-12-04T03:59:00.000Z", "1", "vllm-1", "oom-killed"),
)
HELD = Quarantine("node-a", "2026-12-04T03:59:00.100Z", "2026-12-04T04:09:00.100Z", FAILURES)


def test_a_quarantine_says_until_when_and_why() -> None:
    (event,) = decision_events(QuarantineDecision(added=[HELD]), 600)
    assert (event.type, event.reason) == ("Warning", ext.EVENT_NODE_QUARANTINED)
    assert event.message == (
        "Node node-a quarantined until 2026-12-04T04:09:00.100Z: 2 failures within 600s "
        "(2026-12-04T03:58:00.000Z group 0 pod vllm-0-1 exit-code; "
        "2026-12-04T03:59:00.000Z group 1 pod vllm-1 oom-killed); new pods of this set avoid it"
    )


def test_a_release_says_whether_the_cool_down_ended_or_the_set_opted_out() -> None:
    (ended,) = decision_events(QuarantineDecision(released=[HELD]))
    assert (ended.type, ended.reason) == ("Normal", ext.EVENT_NODE_RELEASED)
    assert ended.message == (
        "Node node-a released: its quarantine since 2026-12-04T03:59:00.100Z "
        "ended at 2026-12-04T04:09:00.100Z"
    )
    (dropped,) = decision_events(QuarantineDecision(released=[HELD]), opted_out=True)
    assert dropped.message == (
        "Node node-a released: the set no longer asks for a quarantine (since 2026-12-04T03:59:00.100Z)"
    )


def test_nodes_held_back_by_the_share_are_named() -> None:
    (event,) = decision_events(QuarantineDecision(held_back=["node-b", "node-c"]))
    assert (event.type, event.reason) == ("Warning", ext.EVENT_NODE_QUARANTINE_LIMITED)
    assert event.message.startswith("Nodes node-b, node-c failed often enough to be quarantined")


def test_nothing_decided_announces_nothing() -> None:
    assert decision_events(QuarantineDecision()) == []
