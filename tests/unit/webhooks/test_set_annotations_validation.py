"""The set-annotation table (core/setannotations.py) at admission: surge-fallback-seconds is a whole
number of seconds from 1 to 86400 on an Ordinal LeaderWorkerSet; disruption-budget a number of groups
≥ 1 or a percentage from 1% to 100%, on either identity; the refusal names the annotation and the
rule. Without the annotations an object is admitted as upstream admits it."""

from __future__ import annotations

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.disruptionbudget.annotation import RULE as BUDGET_RULE
from leaderworkerset.core.gocompat.fielderrors import aggregate_message
from leaderworkerset.webhooks.disaggregatedset import validate as validate_ds
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import ds, lws

KEY = ext.ANNOTATION_SURGE_FALLBACK_SECONDS
RULE = "must be a whole number of seconds from 1 to 86400"
BUDGET = ext.ANNOTATION_DISRUPTION_BUDGET
CASES = [
    pytest.param(c.GROUP_IDENTITY_ORDINAL, {}, "", id="no annotation"),
    pytest.param(c.GROUP_IDENTITY_ORDINAL, {KEY: "5"}, "", id="5"),
    pytest.param(c.GROUP_IDENTITY_ORDINAL, {KEY: "86400"}, "", id="a day"),
    pytest.param(
        c.GROUP_IDENTITY_ORDINAL,
        {KEY: "0"},
        f'metadata.annotations.{KEY}: Invalid value: "0": {RULE}',
        id="0",
    ),
    pytest.param(
        c.GROUP_IDENTITY_ORDINAL,
        {KEY: "5m"},
        f'metadata.annotations.{KEY}: Invalid value: "5m": {RULE}',
        id="5m",
    ),
    pytest.param(
        c.GROUP_IDENTITY_HASH,
        {KEY: "5"},
        f'metadata.annotations.{KEY}: Invalid value: "5": only supported with groupIdentity Ordinal '
        "(a Hash set rolls through its Deployment)",
        id="Hash",
    ),
    pytest.param(
        c.GROUP_IDENTITY_ORDINAL, {ext.ANNOTATION_SURGE_FALLBACK_SINCE: "x"}, "", id="ours, not checked"
    ),
    *(
        pytest.param(identity, {BUDGET: value}, want, id=f"disruption-budget {value!r} {identity}")
        for identity in (c.GROUP_IDENTITY_ORDINAL, c.GROUP_IDENTITY_HASH)
        for value, want in (
            ("1", ""),
            ("25%", ""),
            ("0", f'metadata.annotations.{BUDGET}: Invalid value: "0": {BUDGET_RULE}'),
            ("150%", f'metadata.annotations.{BUDGET}: Invalid value: "150%": {BUDGET_RULE}'),
            ("two", f'metadata.annotations.{BUDGET}: Invalid value: "two": {BUDGET_RULE}'),
        )
    ),
]


@pytest.mark.parametrize(("identity", "annotations", "want"), CASES)
def test_set_annotations_on_create_and_update(identity: str, annotations: dict[str, str], want: str) -> None:
    old = lws().spec_field("groupIdentity", identity).obj()
    new = lws().spec_field("groupIdentity", identity).annotations(annotations).obj()
    for errors in (validate_create(new), validate_update(old, new)):
        assert (aggregate_message(errors) if errors else "") == want
        assert all(error.rule == "set-annotation" for error in errors)


def test_every_case_ran() -> None:
    assert len(CASES) == 17


@pytest.mark.parametrize(("value", "want"), [("5", []), ("0", [RULE])])
def test_a_disaggregatedset_is_checked_too(value: str, want: list[str]) -> None:
    obj = ds()
    obj["metadata"]["annotations"] = {KEY: value}
    _, errors = validate_ds(obj)
    assert [error.detail for error in errors] == want
    assert all(error.field == f"metadata.annotations.{KEY}" for error in errors)
