"""The LWS webhook rejects bad rollout-control annotations, naming the annotation and the rule;
good ones, and an LWS without them, pass exactly as before."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat.fielderrors import aggregate_message
from leaderworkerset.webhooks.leaderworkerset import validate_create, validate_update
from tests.support.builders import lws

PAUSED, DEADLINE = ext.ANNOTATION_ROLLOUT_PAUSED, ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE


@dataclass(frozen=True)
class Case:
    annotations: dict[str, str]
    want: str = ""  # the aggregated denial; "" = admitted
    hash_identity: bool = False


CASES = [
    pytest.param(Case({}), id="no annotation"),
    pytest.param(Case({PAUSED: "true", DEADLINE: "600"}), id="valid values"),
    pytest.param(
        Case(
            {PAUSED: "on"}, f'metadata.annotations.{PAUSED}: Invalid value: "on": must be "true" or "false"'
        ),
        id="pause not true/false",
    ),
    pytest.param(
        Case(
            {DEADLINE: "0"},
            f'metadata.annotations.{DEADLINE}: Invalid value: "0": '
            "must be a whole number of seconds from 1 to 31536000",
        ),
        id="deadline zero",
    ),
    pytest.param(
        Case(
            {PAUSED: "true"},
            f'metadata.annotations.{PAUSED}: Invalid value: "true": only supported with groupIdentity '
            "Ordinal (a Hash set rolls through its Deployment)",
            hash_identity=True,
        ),
        id="Hash identity",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_rollout_annotations_on_create_and_update(case: Case) -> None:
    identity = c.GROUP_IDENTITY_HASH if case.hash_identity else c.GROUP_IDENTITY_ORDINAL
    old = lws().spec_field("groupIdentity", identity).obj()  # before the annotations were set
    new = lws().spec_field("groupIdentity", identity).annotations(case.annotations).obj()
    for errors in (validate_create(new), validate_update(old, new)):
        assert (aggregate_message(errors) if errors else "") == case.want
        assert all(error.rule == "rollout-annotation" for error in errors)


def test_case_count() -> None:
    assert len(CASES) == 5
