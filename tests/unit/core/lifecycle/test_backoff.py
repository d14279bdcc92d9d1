"""core/lifecycle/backoff: the annotation's rules, the delay arithmetic, the decision and the
condition (the back-off's own check, core/lifecycle/backoffsource.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import Condition, invalid_annotation_conditions
from leaderworkerset.core.lifecycle.backoff import (
    BackoffError,
    BackoffPolicy,
    GroupBackoff,
    backoff_policy,
    decide_backoff,
    delay_before,
    format_seconds,
    parse_backoff,
    recreated_state,
)
from leaderworkerset.core.lifecycle.backoffsource import condition_checks
from leaderworkerset.core.objects import Obj
from tests.support.builders import cached_lws


def backoff_conditions(lws: Obj, now: str) -> list[Condition] | None:
    """The LWS's conditions as the controller writes `RestartBackoffInvalid` (the back-off's own
    check, which the typed field may take over)."""
    [(_, message, _, reason)] = [
        check for check in condition_checks(lws) if check[0] == ext.CONDITION_RESTART_BACKOFF_INVALID
    ]
    return invalid_annotation_conditions(lws, ext.CONDITION_RESTART_BACKOFF_INVALID, message, now, reason)


@dataclass(frozen=True)
class ParseCase:
    raw: str
    want: BackoffPolicy | None = None
    want_rule: str = ""


PARSE_CASES = [
    pytest.param(ParseCase("base=10s,cap=5m,reset=10m", BackoffPolicy(10, 300, 600)), id="all three"),
    pytest.param(ParseCase("base=10s", BackoffPolicy(10, 300, 600)), id="defaults: cap 5m, reset 2x cap"),
    pytest.param(ParseCase("base=10m", BackoffPolicy(600, 600, 1200)), id="base above 5m: cap is base"),
    pytest.param(ParseCase(" base = 1s , cap=4s ", BackoffPolicy(1, 4, 8)), id="spaces around pairs"),
    pytest.param(ParseCase("cap=1m,base=500ms", BackoffPolicy(0.5, 60, 120)), id="any order, sub-second"),
    pytest.param(ParseCase("base=1m30s,reset=1h", BackoffPolicy(90, 300, 3600)), id="compound durations"),
    pytest.param(ParseCase("", want_rule="format"), id="empty"),
    pytest.param(ParseCase("base", want_rule="format"), id="key without value"),
    pytest.param(ParseCase("=10s", want_rule="format"), id="value without key"),
    pytest.param(ParseCase("base=10s,", want_rule="format"), id="trailing comma"),
    pytest.param(ParseCase("base=10s,max=5m", want_rule="unknown-key"), id="unknown key"),
    pytest.param(ParseCase("base=10s,base=20s", want_rule="repeated-key"), id="repeated key"),
    pytest.param(ParseCase("cap=5m", want_rule="base-required"), id="no base"),
    pytest.param(ParseCase("base=ten", want_rule="base-duration"), id="not a duration"),
    pytest.param(ParseCase("base=10", want_rule="base-duration"), id="a number without unit"),
    pytest.param(ParseCase("base=0s", want_rule="base-positive"), id="zero base"),
    pytest.param(ParseCase("base=-5s", want_rule="base-positive"), id="negative base"),
    pytest.param(ParseCase("base=10s,cap=5s", want_rule="cap-below-base"), id="cap below base"),
    pytest.param(ParseCase("base=10s,cap=5m,reset=1m", want_rule="reset-below-cap"), id="reset below cap"),
    pytest.param(ParseCase("base=10s,reset=0s", want_rule="reset-positive"), id="zero reset"),
]


def test_parse_table_size() -> None:
    assert len(PARSE_CASES) == 20


@pytest.mark.parametrize("case", PARSE_CASES)
def test_parse_backoff(case: ParseCase) -> None:
    if case.want is not None:
        assert parse_backoff(case.raw) == case.want
        return
    with pytest.raises(BackoffError) as raised:
        parse_backoff(case.raw)
    assert raised.value.rule == case.want_rule
    assert str(raised.value)


POLICY = BackoffPolicy(base=10, cap=60, reset=300)


@pytest.mark.parametrize(
    ("streak", "want_delay"),
    [
        pytest.param(0, 0, id="no previous recreation: immediate"),
        pytest.param(1, 10, id="second in a row: base"),
        pytest.param(2, 20, id="third: 2x base"),
        pytest.param(3, 40, id="fourth: 4x base"),
        pytest.param(4, 60, id="fifth: capped"),
        pytest.param(500, 60, id="a very long streak stays capped (no overflow)"),
    ],
)
def test_delay_doubles_up_to_the_cap(streak: int, want_delay: float) -> None:
    assert delay_before(POLICY, streak) == want_delay


@dataclass(frozen=True)
class DecideCase:
    state: GroupBackoff | None
    now: float
    want_recreate: bool
    want_streak: int
    want_not_before: float


T0 = 1_000_000.0
DECIDE_CASES = [
    pytest.param(DecideCase(None, T0, True, 1, T0), id="first failure: recreate now, streak 1"),
    pytest.param(
        DecideCase(GroupBackoff(1, T0, "old"), T0 + 5, False, 2, T0 + 10), id="second too soon: wait"
    ),
    pytest.param(DecideCase(GroupBackoff(1, T0, "old"), T0 + 10, True, 2, T0 + 10), id="second at the delay"),
    pytest.param(DecideCase(GroupBackoff(3, T0, "old"), T0 + 30, False, 4, T0 + 40), id="fourth waits 40s"),
    pytest.param(DecideCase(GroupBackoff(9, T0, "old"), T0 + 59, False, 10, T0 + 60), id="capped wait"),
    pytest.param(
        DecideCase(GroupBackoff(9, T0, "old"), T0 + 300, True, 1, T0 + 300),
        id="healthy for reset: streak over",
    ),
    pytest.param(
        DecideCase(GroupBackoff(4, T0, "leader"), T0 + 1, True, 4, T0 + 1),
        id="this incarnation's recreation already decided: finish it",
    ),
]


def test_decide_table_size() -> None:
    assert len(DECIDE_CASES) == 7


@pytest.mark.parametrize("case", DECIDE_CASES)
def test_decide_backoff(case: DecideCase) -> None:
    decision = decide_backoff(POLICY, case.state, now=case.now, leader_uid="leader")
    assert (decision.recreate, decision.streak, decision.not_before) == (
        case.want_recreate,
        case.want_streak,
        case.want_not_before,
    )
    if decision.recreate:
        stored = recreated_state(decision, now=case.now, leader_uid="leader")
        assert (stored.streak, stored.last, stored.waiting_until) == (case.want_streak, case.now, None)


def test_a_crash_loop_waits_longer_each_time_then_stays_at_the_cap() -> None:
    """Replaying a group that fails the moment it may be recreated: the gaps double, then cap."""
    state: GroupBackoff | None = None
    now, gaps = T0, []
    for incarnation in range(7):
        uid = f"u{incarnation}"
        now = max(now, decide_backoff(POLICY, state, now=now, leader_uid=uid).not_before)
        if state is not None:
            gaps.append(now - state.last)
        state = recreated_state(
            decide_backoff(POLICY, state, now=now, leader_uid=uid), now=now, leader_uid=uid
        )
    assert gaps == [10, 20, 40, 60, 60, 60]


def test_state_round_trips_and_bad_state_starts_over() -> None:
    state = GroupBackoff(3, T0, "u", T0 + 40)
    assert GroupBackoff.from_json(state.to_json()) == state
    assert GroupBackoff.from_json({"streak": "x", "last": 1}) is None


@pytest.mark.parametrize(
    ("seconds", "want"),
    [(0, "0s"), (0.2, "1s"), (59, "59s"), (60, "1m"), (150, "2m30s"), (3600, "1h"), (3900, "1h5m")],
)
def test_format_seconds(seconds: float, want: str) -> None:
    assert format_seconds(seconds) == want


def _lws(annotation: str | None, conditions: list[dict[str, str]] | None = None) -> dict[str, object]:
    builder = cached_lws("lws")
    if annotation is not None:
        builder = builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, annotation)
    if conditions is not None:
        builder = builder.status({"conditions": conditions})
    return builder.obj()


AVAILABLE = {"type": "Available", "status": "True"}


def test_condition_is_never_written_for_an_lws_without_the_annotation() -> None:
    assert backoff_conditions(_lws(None, [AVAILABLE]), "now") is None
    assert backoff_conditions(_lws("base=10s", [AVAILABLE]), "now") is None


def test_a_bad_value_sets_the_condition_once_and_a_fix_removes_it() -> None:
    conditions = backoff_conditions(_lws("base=0s", [AVAILABLE]), "now")
    assert conditions is not None
    assert conditions[0] == AVAILABLE
    flagged = conditions[1]
    assert (flagged["type"], flagged["status"], flagged["reason"]) == (
        ext.CONDITION_RESTART_BACKOFF_INVALID,
        "True",
        ext.REASON_INVALID_ANNOTATION,
    )
    assert ext.ANNOTATION_RESTART_BACKOFF in flagged["message"]
    assert "base must be greater than 0" in flagged["message"]
    assert backoff_conditions(_lws("base=0s", conditions), "later") is None
    assert backoff_conditions(_lws("base=10s", conditions), "later") == [AVAILABLE]
    assert backoff_conditions(_lws(None, conditions), "later") == [AVAILABLE]


def test_a_hash_identity_set_is_flagged_not_silently_ignored() -> None:
    lws = (
        cached_lws("lws").group_identity("Hash").annotation(ext.ANNOTATION_RESTART_BACKOFF, "base=10s").obj()
    )
    with pytest.raises(BackoffError) as raised:
        backoff_policy(lws)
    assert raised.value.rule == "hash-identity"
    conditions = backoff_conditions(lws, "now")
    assert conditions is not None
    assert "groupIdentity Ordinal only" in conditions[-1]["message"]
