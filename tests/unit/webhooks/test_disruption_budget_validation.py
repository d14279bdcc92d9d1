"""The LWS webhook rejects a disruption-budget value that is not a number of groups ≥ 1 or a
percentage from 1% to 100%, naming the annotation and the rule; good values and an LWS without it
are admitted, on both group identities."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat.fielderrors import aggregate_message
from leaderworkerset.core.lifecycle.disruption import RULE
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import lws

KEY = ext.ANNOTATION_DISRUPTION_BUDGET
CASES = [
    pytest.param({}, "", id="no annotation"),
    pytest.param({KEY: "1"}, "", id="one group"),
    pytest.param({KEY: "25%"}, "", id="a percentage"),
    pytest.param({KEY: "0"}, f'metadata.annotations.{KEY}: Invalid value: "0": {RULE}', id="zero"),
    pytest.param({KEY: "150%"}, f'metadata.annotations.{KEY}: Invalid value: "150%": {RULE}', id="over 100%"),
    pytest.param({KEY: "two"}, f'metadata.annotations.{KEY}: Invalid value: "two": {RULE}', id="a word"),
]


@pytest.mark.parametrize(("annotations", "want"), CASES)
@pytest.mark.parametrize("identity", [c.GROUP_IDENTITY_ORDINAL, c.GROUP_IDENTITY_HASH])
def test_disruption_budget_on_create_and_update(
    annotations: dict[str, str], want: str, identity: str
) -> None:
    old = lws().spec_field("groupIdentity", identity).obj()
    new = lws().spec_field("groupIdentity", identity).annotations(annotations).obj()
    for errors in (validate_create(new), validate_update(old, new)):
        assert (aggregate_message(errors) if errors else "") == want
        assert all(error.rule == "disruption-budget" for error in errors)


def test_disruption_budget_cases_run() -> None:
    assert len(CASES) == 6
