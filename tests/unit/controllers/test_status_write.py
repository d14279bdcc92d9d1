"""The LWS controller's one status write per round (controllers/leaderworkerset/status.py): the steps'
contributions go out in one PUT guarded by the resourceVersion the round read, the events of their
transitions follow it, and a conflict drops both."""

from __future__ import annotations

from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.leaderworkerset.round import Round
from leaderworkerset.controllers.leaderworkerset.status import StatusWriter
from leaderworkerset.core.objects import ControllerEvent
from leaderworkerset.runtime.clock import FakeClock
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError
from leaderworkerset.runtime.objects import ObjectKey
from tests.support.builders import cached_lws

Obj = dict[str, Any]
EVENT = ControllerEvent(c.EVENT_TYPE_NORMAL, "Reason", "Action", "note", None)


class FakeClient:
    def __init__(self, fail_with: Exception | None = None) -> None:
        self.updates: list[tuple[Obj, str]] = []
        self.fail_with = fail_with

    async def update(self, _resource: object, body: Obj, subresource: str) -> Obj:
        self.updates.append((body, subresource))
        if self.fail_with is not None:
            raise self.fail_with
        meta = {**body["metadata"], "resourceVersion": str(int(body["metadata"]["resourceVersion"]) + 1)}
        return {**body, "metadata": meta}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def record(self, _ref: object, _type: str, reason: str, *_rest: object) -> None:
        self.events.append(reason)

    def warning(self, _ref: object, reason: str, *_rest: object) -> None:
        self.events.append(reason)


def _setup(client: FakeClient) -> tuple[StatusWriter, FakeRecorder, Round]:
    recorder = FakeRecorder()
    writer = StatusWriter(client, None, recorder, FakeClock())  # type: ignore[arg-type]
    lws = cached_lws().obj()
    lws["metadata"]["resourceVersion"] = "7"
    return writer, recorder, Round.of(lws, ObjectKey(lws["metadata"]["namespace"], lws["metadata"]["name"]))


def _conditions(body: Obj) -> list[str]:
    return [cond["type"] for cond in body["status"].get("conditions") or []]


async def test_two_contributions_go_out_in_one_write_then_their_events() -> None:
    client = FakeClient()
    writer, recorder, round_ = _setup(client)
    round_.set_status({"conditions": [{"type": c.CONDITION_WORKLOAD_SCHEDULING_CREATED}]})
    round_.set_status({**round_.lws["status"], "readyReplicas": 1}, [EVENT])
    assert recorder.events == []  # not before the write lands

    assert await writer.persist(round_)

    [(body, subresource)] = client.updates
    assert subresource == "status"
    assert (body["apiVersion"], body["kind"]) == (c.LWS_API_VERSION, c.LWS_KIND)
    assert body["metadata"]["resourceVersion"] == "7"  # the version the round read
    assert (_conditions(body), body["status"]["readyReplicas"]) == (
        [c.CONDITION_WORKLOAD_SCHEDULING_CREATED],
        1,
    )
    assert recorder.events == ["Reason"]
    # Read-your-writes: the next round starts from what was written, not the stale cache.
    assert round_.stored["metadata"]["resourceVersion"] == "8"
    stale = {**body, "metadata": {**body["metadata"], "resourceVersion": "7"}}
    assert writer.memo.freshest(round_.key, stale) is round_.stored
    assert await writer.persist(round_)  # nothing new: no second write
    assert len(client.updates) == 1


async def test_a_round_that_changed_nothing_writes_nothing() -> None:
    client = FakeClient()
    writer, recorder, round_ = _setup(client)
    assert await writer.persist(round_)
    assert (client.updates, recorder.events) == ([], [])


async def test_a_conflict_drops_the_write_and_its_events() -> None:
    client = FakeClient(ApiStatusError(ApiStatus(code=409, reason="Conflict", message="m")))
    writer, recorder, round_ = _setup(client)
    round_.set_status({"readyReplicas": 1}, [EVENT])

    assert not await writer.persist(round_)

    assert len(client.updates) == 1
    assert recorder.events == []
    assert round_.lws is round_.stored  # nothing of it landed


async def test_a_failing_round_still_writes_what_it_decided_and_leaves_a_deleted_lws_to_the_next() -> None:
    client = FakeClient(ApiStatusError(ApiStatus(code=404, reason="NotFound", message="m")))
    writer, recorder, round_ = _setup(client)
    writer.report_invalid_spec(round_, "spec.x: bad")

    await writer.persist_failed(round_)  # the caller raises the round's own error

    [(body, _)] = client.updates
    assert _conditions(body) == [c.CONDITION_PROGRESSING]
    assert body["status"]["conditions"][0]["reason"] == c.REASON_INVALID_SPEC
    assert recorder.events == [c.REASON_INVALID_SPEC]  # the warning goes out whatever the write does


async def test_an_annotation_nobody_set_is_never_flagged() -> None:
    writer, _, round_ = _setup(FakeClient())
    assert not writer.flag_annotations(round_)
    assert not round_.status_changed


async def test_a_bad_annotation_is_flagged_in_the_rounds_status() -> None:
    client = FakeClient()
    writer, recorder, round_ = _setup(client)
    round_.lws["metadata"]["annotations"] = {ext.ANNOTATION_RESTART_BACKOFF: "not json"}
    assert writer.flag_annotations(round_)
    assert await writer.persist(round_)
    [(body, _)] = client.updates
    assert _conditions(body) == [ext.CONDITION_RESTART_BACKOFF_INVALID]
    assert recorder.events == [ext.EVENT_INVALID_RESTART_BACKOFF]


async def test_an_unusable_restart_backoff_field_is_flagged_with_its_own_reason() -> None:
    client = FakeClient()
    writer, recorder, round_ = _setup(client)
    round_.lws["spec"]["leaderWorkerTemplate"]["restartBackoff"] = {"baseSeconds": 600, "capSeconds": 300}
    assert writer.flag_annotations(round_)
    assert await writer.persist(round_)
    [(body, _)] = client.updates
    [condition] = body["status"]["conditions"]
    assert (condition["type"], condition["reason"]) == (
        ext.CONDITION_RESTART_BACKOFF_INVALID,
        ext.REASON_INVALID_FIELD,
    )
    assert "baseSeconds must not be greater than capSeconds" in condition["message"]
    assert recorder.events == [ext.EVENT_INVALID_RESTART_BACKOFF]


async def test_an_annotation_overridden_by_the_field_is_flagged_once() -> None:
    client = FakeClient()
    writer, recorder, round_ = _setup(client)
    round_.lws["spec"]["leaderWorkerTemplate"]["restartBackoff"] = {"baseSeconds": 10, "capSeconds": 300}
    round_.lws["metadata"]["annotations"] = {ext.ANNOTATION_RESTART_BACKOFF: "base=1s"}
    assert writer.flag_annotations(round_)
    assert await writer.persist(round_)
    [(body, _)] = client.updates
    assert _conditions(body) == [ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN]
    assert recorder.events == [ext.EVENT_RESTART_BACKOFF_OVERRIDDEN]
    round_.lws["status"] = body["status"]
    assert not writer.flag_annotations(round_)  # already said: no second write, no second event
