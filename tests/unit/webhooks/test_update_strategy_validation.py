"""`update-strategy` at admission (a row of core/setannotations.py): `InPlaceIfPossible` or `Recreate`;
`InPlaceIfPossible` only on an Ordinal set. The refusal names the annotation and the rule; a
DisaggregatedSet does not take it (its roles roll through their own sets)."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat.fielderrors import aggregate_message
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import lws

KEY = ext.ANNOTATION_UPDATE_STRATEGY
FIELD = f"metadata.annotations.{KEY}"
CASES = [
    (c.GROUP_IDENTITY_ORDINAL, "InPlaceIfPossible", ""),
    (c.GROUP_IDENTITY_ORDINAL, "Recreate", ""),
    (c.GROUP_IDENTITY_HASH, "Recreate", ""),
    (
        c.GROUP_IDENTITY_ORDINAL,
        "InPlace",
        f'{FIELD}: Invalid value: "InPlace": must be one of InPlaceIfPossible, Recreate',
    ),
    (
        c.GROUP_IDENTITY_HASH,
        "InPlaceIfPossible",
        f'{FIELD}: Invalid value: "InPlaceIfPossible": in-place updates need groupIdentity Ordinal '
        "(a Hash set rolls through its Deployment)",
    ),
]


@pytest.mark.parametrize(("identity", "value", "want"), CASES)
def test_update_strategy_on_create_and_update(identity: str, value: str, want: str) -> None:
    old = lws().spec_field("groupIdentity", identity).obj()
    new = lws().spec_field("groupIdentity", identity).annotations({KEY: value}).obj()
    for errors in (validate_create(new), validate_update(old, new)):
        assert (aggregate_message(errors) if errors else "") == want
        assert all(error.rule == "set-annotation" for error in errors)


def test_every_case_ran() -> None:
    assert len(CASES) == 5
