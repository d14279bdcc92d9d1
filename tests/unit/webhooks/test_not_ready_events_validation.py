"""The LWS webhook rejects a not-ready-events value other than "true" or "false", naming the
annotation and the rule; both values, and an LWS without it, are admitted."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat.fielderrors import aggregate_message
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import lws

KEY = ext.ANNOTATION_NOT_READY_EVENTS
CASES = [
    pytest.param({}, "", id="no annotation"),
    pytest.param({KEY: "true"}, "", id="true"),
    pytest.param({KEY: "false"}, "", id="false"),
    pytest.param(
        {KEY: "yes"}, f'metadata.annotations.{KEY}: Invalid value: "yes": must be "true" or "false"', id="yes"
    ),
]


@pytest.mark.parametrize(("annotations", "want"), CASES)
@pytest.mark.parametrize("identity", [c.GROUP_IDENTITY_ORDINAL, c.GROUP_IDENTITY_HASH])
def test_not_ready_events_on_create_and_update(annotations: dict[str, str], want: str, identity: str) -> None:
    old = lws().spec_field("groupIdentity", identity).obj()
    new = lws().spec_field("groupIdentity", identity).annotations(annotations).obj()
    for errors in (validate_create(new), validate_update(old, new)):
        assert (aggregate_message(errors) if errors else "") == want
        assert all(error.rule == "not-ready-events" for error in errors)


def test_not_ready_events_cases_run() -> None:
    assert len(CASES) == 4
