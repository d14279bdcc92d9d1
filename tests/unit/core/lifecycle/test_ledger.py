"""core/ledger: the cause of a group recreation read from its trigger pod, and the bounded history."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.core.lifecycle.ledger import (
    Action,
    Cause,
    LedgerEntry,
    Trigger,
    appended,
    classify_trigger,
    decode_entries,
    encode_entries,
    entry_for,
    needs_node,
    needs_probe_events,
    probe_failed_containers,
)
from tests.support.builders import NodeBuilder, PodBuilder, pod

Obj = dict[str, Any]
NODE = "kwok-node-1"


def _worker() -> PodBuilder:
    return pod("lws-0-1").lws_name("lws").group_index("0").worker_index("1").node(NODE)


def _terminated(code: int, reason: str = "Error") -> Obj:
    return {"terminated": {"exitCode": code, "reason": reason}}


def _node(ready: str) -> Obj:
    return NodeBuilder(NODE).condition("Ready", ready).obj()


@dataclass(frozen=True)
class ClassifyCase:
    pod: Obj
    want_cause: Cause
    want_container: str = ""
    want_exit_code: int | None = None
    node: Obj | None = None
    probe_failures: tuple[str, ...] = ()


CLASSIFY_CASES = [
    pytest.param(
        ClassifyCase(
            _worker().container_status("worker", restarts=1, last_state=_terminated(3)).obj(),
            Cause.EXIT_CODE, "worker", 3,
        ),
        id="a crashed container restarted: its last exit code",
    ),
    pytest.param(
        ClassifyCase(
            _worker().phase("Failed").container_status("worker", state=_terminated(42)).obj(),
            Cause.EXIT_CODE, "worker", 42,
        ),
        id="a failed pod: the current terminated state",
    ),
    pytest.param(
        ClassifyCase(
            _worker()
            .container_status("sidecar", restarts=1, last_state=_terminated(1))
            .container_status("worker", restarts=4, last_state=_terminated(2))
            .obj(),
            Cause.EXIT_CODE, "worker", 2,
        ),
        id="two restarted containers: the most restarted one",
    ),
    pytest.param(
        ClassifyCase(
            _worker().container_status("worker", restarts=1, last_state=_terminated(137, "OOMKilled")).obj(),
            Cause.OOM_KILLED, "worker", 137,
        ),
        id="OOMKilled last termination",
    ),
    pytest.param(
        ClassifyCase(
            _worker().container_status("worker", restarts=2, last_state=_terminated(137)).obj(),
            Cause.PROBE_FAILURE, "worker", 137, probe_failures=("worker",),
        ),
        id="killed after a failed liveness probe (the kubelet's Unhealthy event)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().container_status("worker", restarts=2, last_state=_terminated(137)).obj(),
            Cause.EXIT_CODE, "worker", 137, probe_failures=("sidecar",),
        ),
        id="exit 137 with another container's probe failing: a plain exit code",
    ),
    pytest.param(
        ClassifyCase(
            _worker().container_status("worker", restarts=1, last_state=_terminated(1)).obj(),
            Cause.EXIT_CODE, "worker", 1, probe_failures=("worker",),
        ),
        id="exit 1 is no probe kill even with a probe failing",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="PreemptionByScheduler").obj(),
            Cause.PREEMPTION,
        ),
        id="preempted by the scheduler (DisruptionTarget)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="EvictionByEvictionAPI").obj(),
            Cause.EVICTION,
        ),
        id="evicted through the Eviction API (a drain)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="TerminationByKubelet").obj(),
            Cause.EVICTION,
        ),
        id="node-pressure eviction by the kubelet",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="DeletionByTaintManager").obj(),
            Cause.NODE_NOT_READY,
        ),
        id="deleted by the taint manager (node not-ready or unreachable)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="DeletionByPodGC").obj(),
            Cause.NODE_NOT_READY,
        ),
        id="deleted by pod GC (its node is gone)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", "False", reason="PreemptionByScheduler").obj(),
            Cause.DELETION,
        ),
        id="a DisruptionTarget that is False says nothing",
    ),
    pytest.param(
        ClassifyCase(
            _worker().phase("Failed", "Evicted", "The node was low on resource: memory.").obj(),
            Cause.EVICTION,
        ),
        id="kubelet eviction (status reason Evicted)",
    ),
    pytest.param(
        ClassifyCase(_worker().phase("Failed", "Preempting").obj(), Cause.PREEMPTION),
        id="kubelet preemption for a critical pod (status reason Preempting)",
    ),
    pytest.param(
        ClassifyCase(
            _worker().deleting().condition("DisruptionTarget", reason="PreemptionByScheduler")
            .container_status("worker", restarts=1, last_state=_terminated(1)).obj(),
            Cause.PREEMPTION,
        ),
        id="the disruption wins over an older crash",
    ),
    pytest.param(
        ClassifyCase(_worker().deleting().obj(), Cause.DELETION, node=_node("True")),
        id="deleted on a Ready node: a plain deletion",
    ),
    pytest.param(
        ClassifyCase(_worker().deleting().obj(), Cause.NODE_NOT_READY, node=_node("Unknown")),
        id="deleted on a node whose Ready is Unknown",
    ),
    pytest.param(
        ClassifyCase(_worker().deleting().obj(), Cause.NODE_NOT_READY, node=_node("False")),
        id="deleted on a NotReady node",
    ),
    pytest.param(
        ClassifyCase(_worker().deleting().obj(), Cause.DELETION),
        id="deleted, node not read",
    ),
    pytest.param(
        ClassifyCase(_worker().container_status("worker", restarts=1).obj(), Cause.UNKNOWN, "worker"),
        id="a restart reported without its terminated state",
    ),
]  # fmt: skip


def test_classification_table_size() -> None:
    assert len(CLASSIFY_CASES) == 21


@pytest.mark.parametrize("case", CLASSIFY_CASES)
def test_classify_trigger(case: ClassifyCase) -> None:
    trigger = classify_trigger(case.pod, node=case.node, probe_failures=case.probe_failures)
    assert (trigger.cause, trigger.container, trigger.exit_code) == (
        case.want_cause,
        case.want_container,
        case.want_exit_code,
    )
    assert trigger.pod == "lws-0-1"
    assert trigger.node == NODE


@dataclass(frozen=True)
class ReadCase:
    pod: Obj
    want_node: bool
    want_probe_container: str | None


READ_CASES = [
    pytest.param(ReadCase(_worker().deleting().obj(), True, None), id="bare deletion: read the node"),
    pytest.param(
        ReadCase(pod("p").deleting().obj(), False, None), id="deleted before it was scheduled: no node"
    ),
    pytest.param(
        ReadCase(_worker().container_status("w", restarts=1, last_state=_terminated(137)).obj(), False, "w"),
        id="exit 137: read its probe events",
    ),
    pytest.param(
        ReadCase(_worker().container_status("w", restarts=1, last_state=_terminated(1)).obj(), False, None),
        id="exit 1: no read",
    ),
    pytest.param(
        ReadCase(
            _worker().container_status("w", restarts=1, last_state=_terminated(137, "OOMKilled")).obj(),
            False, None,
        ),
        id="OOM: no read",
    ),
]  # fmt: skip


def test_read_table_size() -> None:
    assert len(READ_CASES) == 5


@pytest.mark.parametrize("case", READ_CASES)
def test_what_the_shell_reads_to_classify(case: ReadCase) -> None:
    assert needs_node(case.pod) is case.want_node
    assert needs_probe_events(case.pod) == case.want_probe_container


def test_probe_failed_containers_from_core_and_events_api_events() -> None:
    events = [
        {"reason": "Unhealthy", "message": "Liveness probe failed: HTTP 500",
         "involvedObject": {"fieldPath": "spec.containers{worker}"}},
        {"reason": "Unhealthy", "note": "Startup probe failed: timeout",
         "regarding": {"fieldPath": "spec.containers{init-check}"}},
        {"reason": "Unhealthy", "message": "Readiness probe failed: 503",
         "involvedObject": {"fieldPath": "spec.containers{ready-only}"}},
        {"reason": "Killing", "message": "Liveness probe failed",
         "involvedObject": {"fieldPath": "spec.containers{other}"}},
    ]  # fmt: skip
    assert probe_failed_containers(events) == {"worker", "init-check"}


WHEN = datetime.datetime(2026, 12, 1, 13, 0, 0, 250_000, tzinfo=datetime.UTC)


def _entry(index: int) -> LedgerEntry:
    trigger = Trigger(Cause.EXIT_CODE, f"lws-{index}-1", "worker", 1, NODE, "Error")
    return entry_for(
        trigger, group=str(index), action=Action.RECREATED, when=WHEN + datetime.timedelta(seconds=index)
    )


@dataclass(frozen=True)
class AppendCase:
    existing: int
    capacity: int
    want_groups: tuple[str, ...]


APPEND_CASES = [
    pytest.param(AppendCase(0, 3, ("0",)), id="first entry"),
    pytest.param(AppendCase(2, 3, ("0", "1", "2")), id="below the cap"),
    pytest.param(AppendCase(3, 3, ("1", "2", "3")), id="at the cap: the oldest goes"),
    pytest.param(AppendCase(5, 2, ("4", "5")), id="over a lowered cap: trimmed to it"),
]


def test_append_table_size() -> None:
    assert len(APPEND_CASES) == 4


@pytest.mark.parametrize("case", APPEND_CASES)
def test_appended_keeps_the_newest_within_capacity(case: AppendCase) -> None:
    entries = [_entry(i) for i in range(case.existing)]
    result = appended(entries, _entry(case.existing), case.capacity)
    assert tuple(e.group for e in result) == case.want_groups


def test_a_retried_write_does_not_append_twice() -> None:
    entries = [_entry(0)]
    assert appended(entries, _entry(0)) == entries


def test_entries_round_trip_through_the_configmap_encoding() -> None:
    entries = [_entry(0), entry_for(
        Trigger(Cause.DELETION, "lws-1-1", node=NODE, detail="pod deleted"),
        group="1", action=Action.BACKING_OFF, when=WHEN, leader_uid="u1", delay_seconds=20.0,
    )]  # fmt: skip
    encoded = encode_entries(entries)
    assert decode_entries({"entries": encoded}) == entries
    assert entries[0].time == "2026-12-01T13:00:00.250Z"


def test_unreadable_entries_are_skipped_not_fatal() -> None:
    assert decode_entries({"entries": "not json"}) == []
    assert decode_entries({"entries": '[{"time": "t"}, 3]'}) == []
