"""Event recorder: events.k8s.io/v1 bodies, series folding, bounded non-blocking queue."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.events import EventRecorder, EventSink, ObjectReference, object_ref
from leaderworkerset.runtime.projections import POD_CODEC
from tests.unit.runtime.builders import encode, obj
from tests.unit.runtime.fakes import settle

T0 = datetime.datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=datetime.UTC)
LWS = ObjectReference(
    apiVersion="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet", namespace="ns", name="lws", uid="u1"
)


class FakeSink(EventSink):
    def __init__(self, fail_patch_with: Exception | None = None) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.patched: list[tuple[str, str, dict[str, Any]]] = []
        self.fail_patch_with = fail_patch_with

    async def create(self, namespace: str, body: dict[str, Any]) -> None:
        self.created.append((namespace, body))

    async def patch_series(self, namespace: str, name: str, series: dict[str, Any]) -> None:
        if self.fail_patch_with is not None:
            raise self.fail_patch_with
        self.patched.append((namespace, name, series))


def recorder(sink: EventSink, clock: FakeClock, max_queued: int = 10) -> EventRecorder:
    return EventRecorder(
        sink, "leaderworkerset", reporting_instance="leaderworkerset-host", clock=clock,
        wall_clock=lambda: T0, max_queued=max_queued,
    )  # fmt: skip


async def test_event_body_matches_events_k8s_io_v1() -> None:
    sink = FakeSink()
    rec = recorder(sink, FakeClock())
    rec.normal(LWS, "CreatingRevision", "Create", "Creating revision with key abc")
    await rec.flush()
    [(namespace, body)] = sink.created
    assert namespace == "ns"
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"lws.{int(T0.timestamp() * 1e9):x}", "namespace": "ns"},
        "eventTime": "2026-11-29T12:00:00.123456Z",
        "reportingController": "leaderworkerset",
        "reportingInstance": "leaderworkerset-host",
        "action": "Create",
        "reason": "CreatingRevision",
        "note": "Creating revision with key abc",
        "type": "Normal",
        "regarding": {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "namespace": "ns",
            "name": "lws",
            "uid": "u1",
        },
    }


@pytest.mark.parametrize(
    ("notes", "advance", "want_created", "want_series_counts"),
    [
        pytest.param(["a", "a", "a", "a"], 0.0, 1, [2, 4], id="repeats fold into a series, refreshed later"),
        pytest.param(["a", "b"], 0.0, 2, [], id="different notes are different events"),
        pytest.param(["a", "a"], 361.0, 2, [], id="repeat after the series window starts afresh"),
        pytest.param(["a", "a"], 0.0, 1, [2], id="nothing left to refresh after the first repeat"),
    ],
)
async def test_series(
    notes: list[str], advance: float, want_created: int, want_series_counts: list[int]
) -> None:
    sink = FakeSink()
    clock = FakeClock()
    rec = recorder(sink, clock)
    for note in notes:
        rec.warning(LWS, "FailedCreate", "Create", note)
        await rec.flush()
        clock.advance(advance)
    await rec.refresh_series()
    assert len(sink.created) == want_created
    assert [p[2]["count"] for p in sink.patched] == want_series_counts


async def test_series_on_expired_event_creates_a_new_one() -> None:
    sink = FakeSink(fail_patch_with=ApiStatusError(ApiStatus(code=404, reason="NotFound")))
    rec = recorder(sink, FakeClock())
    rec.normal(LWS, "R", "Update", "n")
    rec.normal(LWS, "R", "Update", "n")
    await rec.flush()
    assert len(sink.created) == 2


async def test_full_queue_drops_instead_of_blocking() -> None:
    sink = FakeSink()
    rec = recorder(sink, FakeClock(), max_queued=2)
    for i in range(5):
        rec.normal(LWS, "R", "Update", str(i))
    assert rec.dropped == 3
    await rec.flush()
    assert [b["note"] for _, b in sink.created] == ["0", "1"]


async def test_sink_failure_is_swallowed() -> None:
    class Broken(FakeSink):
        async def create(self, namespace: str, body: dict[str, Any]) -> None:
            raise ConnectionError("down")

    rec = recorder(Broken(), FakeClock())
    rec.normal(LWS, "R", "Update", "n")
    await rec.flush()  # must not raise
    assert rec.pending() == 0


async def test_long_notes_are_truncated() -> None:
    sink = FakeSink()
    rec = recorder(sink, FakeClock())
    rec.normal(LWS, "R", "Update", "x" * 5000)
    await rec.flush()
    assert len(sink.created[0][1]["note"]) == 1024


@pytest.mark.parametrize(
    ("source", "kw", "want"),
    [
        pytest.param(
            obj("p", "ns", uid="u", rv="7"), {}, ObjectReference("v1", "Pod", "ns", "p", "u", "7"), id="dict"
        ),
        pytest.param(
            POD_CODEC.decode_object(encode(obj("p", "ns", uid="u", rv="7"))),
            {"api_version": "v1", "kind": "Pod"},
            ObjectReference("v1", "Pod", "ns", "p", "u", "7"),
            id="projection with explicit kind",
        ),
    ],
)
def test_object_ref(source: Any, kw: dict[str, str], want: ObjectReference) -> None:
    assert object_ref(source, **kw) == want


async def test_writer_refreshes_series_periodically_and_finishes_them() -> None:
    sink = FakeSink()
    clock = FakeClock()
    rec = recorder(sink, clock)
    writer = asyncio.create_task(rec.run())
    for _ in range(5):
        rec.normal(LWS, "R", "Update", "n")
    await settle()
    assert [p[2]["count"] for p in sink.patched] == [2]
    clock.advance(30 * 60.0)
    await settle()
    assert [p[2]["count"] for p in sink.patched] == [2, 5]
    rec.normal(LWS, "R", "Update", "n")
    await settle()
    assert len(sink.created) == 2, "the series finished after 6 quiet minutes: a new event starts"
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)


async def test_finished_series_writes_its_last_count_before_a_new_event() -> None:
    sink = FakeSink()
    clock = FakeClock()
    rec = recorder(sink, clock)
    for _ in range(3):
        rec.normal(LWS, "R", "Update", "n")
    await rec.flush()
    clock.advance(7 * 60.0)
    rec.normal(LWS, "R", "Update", "n")
    await rec.flush()
    assert [p[2]["count"] for p in sink.patched] == [2, 3]
    assert len(sink.created) == 2
