"""The set-annotation table with the webhooks off: the controller flags a bad value in the rule's
condition with a Warning event (once), ignores it, and clears the flag once the value is fixed."""

from __future__ import annotations

from datetime import UTC, datetime

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.desired.statuswrite import annotation_status
from leaderworkerset.core.rollout.surgefallback import fallback_seconds
from leaderworkerset.core.setannotations import RULES, annotation_errors
from tests.support.builders import cached_lws

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
KEY = ext.ANNOTATION_SURGE_FALLBACK_SECONDS


def test_a_bad_value_is_flagged_once_ignored_and_cleared_when_fixed() -> None:
    bad = cached_lws().annotations({KEY: "soon"}).obj()
    assert fallback_seconds(bad) is None  # ignored: the surge behaves as upstream's
    flagged = annotation_status(bad, NOW)
    assert flagged is not None
    status, events = flagged
    [condition] = [
        cond for cond in status["conditions"] if cond["type"] == ext.CONDITION_SURGE_FALLBACK_INVALID
    ]
    want = (
        f"annotation {KEY}: 'soon' is invalid: must be a whole number of seconds from 1 to 86400; "
        "the surge is never given back (as upstream)"
    )
    assert (condition["status"], condition["reason"], condition["message"]) == (
        c.CONDITION_TRUE,
        ext.REASON_INVALID_ANNOTATION,
        want,
    )
    assert [(e.type, e.reason, e.message) for e in events] == [
        (c.EVENT_TYPE_WARNING, ext.EVENT_INVALID_SURGE_FALLBACK, want)
    ]
    assert annotation_status({**bad, "status": status}, NOW) is None  # said once
    fixed = cached_lws().annotations({KEY: "30"}).status(status).obj()
    cleared = annotation_status(fixed, NOW)
    assert cleared is not None
    assert cleared == ({}, [])


def test_a_set_without_our_annotations_is_never_written() -> None:
    assert annotation_status(cached_lws().obj(), NOW) is None


def test_rules_name_their_own_condition_and_event() -> None:
    assert len(RULES) == 3  # surge-fallback-seconds, disruption-budget, restart-strategy
    assert {rule.condition for rule in RULES}.isdisjoint({c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING})
    assert annotation_errors(cached_lws().annotations({KEY: "5"}).obj(), c.DS_KIND) == []
    assert [
        rule.key for rule, _ in annotation_errors(cached_lws().annotations({KEY: "0"}).obj(), c.DS_KIND)
    ] == [KEY]
