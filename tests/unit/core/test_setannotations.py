"""The set-annotation table with the webhooks off: the controller flags a bad value in the rule's
condition with a Warning event (once), ignores it, and clears the flag once the value is fixed."""

from __future__ import annotations

from datetime import UTC, datetime

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.desired.statuswrite import annotation_status
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.rollout.surgefallback.decision import fallback_seconds
from leaderworkerset.core.setannotations import RULES, annotation_errors, flag_checks
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
    unsupported = inplacerestart.Prerequisites(unsupported="no", agent_image=False)
    assert annotation_status(cached_lws().obj(), NOW, unsupported) is None


def test_an_in_place_restart_the_manager_cannot_honour_is_flagged_until_it_can() -> None:
    lws = (
        cached_lws()
        .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
        .annotation(ext.ANNOTATION_RESTART_STRATEGY, inplacerestart.IN_PLACE)
        .obj()
    )
    assert annotation_status(lws, NOW) is None  # nothing missing: never written
    flagged = annotation_status(lws, NOW, inplacerestart.Prerequisites(agent_image=False))
    assert flagged is not None
    status, events = flagged
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        ext.CONDITION_IN_PLACE_RESTART_UNAVAILABLE,
        c.CONDITION_TRUE,
        ext.REASON_NO_RESTART_AGENT_IMAGE,
    )
    assert ext.ENV_RESTART_AGENT_IMAGE in condition["message"]
    assert [(e.type, e.reason) for e in events] == [
        (c.EVENT_TYPE_WARNING, ext.EVENT_IN_PLACE_RESTART_UNAVAILABLE)
    ]
    flagged_lws = {**lws, "status": status}
    assert (
        annotation_status(flagged_lws, NOW, inplacerestart.Prerequisites(agent_image=False)) is None
    )  # said once
    moved = annotation_status(
        flagged_lws, NOW, inplacerestart.Prerequisites(unsupported="the API server drops it")
    )
    assert moved is not None
    assert moved[0]["conditions"][0]["reason"] == ext.REASON_RESTART_ALL_CONTAINERS_UNSUPPORTED
    assert annotation_status(flagged_lws, NOW) == ({}, [])  # resolved: cleared


def test_rules_name_their_own_condition_and_event() -> None:
    # restart-backoff, rollout-paused, rollout-progress-deadline-seconds, not-ready-events,
    # surge-fallback-seconds, disruption-budget, quarantine-after, -cooldown, -mode, update-strategy,
    # restart-strategy, and upstream main's DS revision-hash-version
    assert len(RULES) == 12
    assert len({rule.key for rule in RULES}) == len(RULES)
    assert {rule.condition for rule in RULES}.isdisjoint({c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING})
    assert annotation_errors(cached_lws().annotations({KEY: "5"}).obj(), c.DS_KIND) == []
    assert [
        rule.key for rule, _ in annotation_errors(cached_lws().annotations({KEY: "0"}).obj(), c.DS_KIND)
    ] == [KEY]


def test_rows_sharing_a_condition_name_every_bad_value_in_one_message_and_event() -> None:
    """The two quarantine annotations share QuarantineAnnotationInvalid: one check, both errors."""
    after, cooldown = ext.ANNOTATION_QUARANTINE_AFTER, ext.ANNOTATION_QUARANTINE_COOLDOWN
    bad = cached_lws().annotations({after: "3", cooldown: "soon"}).obj()
    checks = [
        check
        for check in flag_checks(bad, c.LWS_KIND)
        if check[0] == ext.CONDITION_QUARANTINE_ANNOTATION_INVALID
    ]
    want = (
        f"annotation {after}: '3' is invalid: must be <failures>/<window>, e.g. 3/10m; "
        f"annotation {cooldown}: 'soon' is invalid: must be a Go duration greater than 0, e.g. 30m; "
        "no node is quarantined"
    )
    [(_, message, event)] = checks
    assert message == want
    assert event is not None
    assert (event.reason, event.message) == (ext.EVENT_INVALID_QUARANTINE, want)
    fine = cached_lws().annotations({after: "3/10m", cooldown: "10m"}).obj()
    assert [check for check in flag_checks(fine, c.LWS_KIND) if check[1] is not None] == []
