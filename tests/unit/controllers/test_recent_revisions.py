"""`RecentRevisions`: our own revision creates until the cache shows them, and the creates whose
answer was lost, which the LWS controller reads back before it plans again."""

from __future__ import annotations

from typing import Any

import aiohttp

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.memos import RecentRevisions
from leaderworkerset.runtime.errors import ApiStatus, ApiStatusError, outcome_unknown
from leaderworkerset.runtime.objects import ObjectKey


def revision(name: str, lws: str = "lws") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": {c.LABEL_SET_NAME: lws}}}


def test_an_uncertain_create_is_pending_for_its_set_until_settled() -> None:
    recent = RecentRevisions()
    recent.add_uncertain(revision("lws-abc-1"))
    recent.add_uncertain(revision("other-abc-1", lws="other"))
    assert recent.uncertain("ns", "lws") == [ObjectKey("ns", "lws-abc-1")]
    assert recent.merged([], "ns", "lws") == []  # not known to exist yet

    recent.settle(ObjectKey("ns", "lws-abc-1"), revision("lws-abc-1"))  # read back: it exists
    assert recent.uncertain("ns", "lws") == []
    assert recent.merged([], "ns", "lws") == [revision("lws-abc-1")]


def test_an_uncertain_create_that_did_not_happen_is_dropped() -> None:
    recent = RecentRevisions()
    recent.add_uncertain(revision("lws-abc-1"))
    recent.settle(ObjectKey("ns", "lws-abc-1"), None)
    assert recent.uncertain("ns", "lws") == []
    assert recent.merged([], "ns", "lws") == []


def test_which_failures_leave_a_write_possibly_done() -> None:
    def api_error(code: int, reason: str) -> ApiStatusError:
        return ApiStatusError(ApiStatus(code=code, reason=reason, message="m"))

    cases = [
        (aiohttp.ServerDisconnectedError(), True),
        (TimeoutError("timed out"), True),
        (api_error(504, "Timeout"), True),
        (api_error(500, "InternalError"), True),
        (api_error(409, "AlreadyExists"), False),
        (api_error(422, "Invalid"), False),
        (api_error(403, "Forbidden"), False),
    ]
    assert [outcome_unknown(err) for err, _ in cases] == [want for _, want in cases]
    assert len(cases) == 7
