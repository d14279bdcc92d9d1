"""core/lifecycle/backoffsource: which restart back-off applies (typed field or annotation), what the
controller reports of it with the webhooks off, and the `lws status` lines."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle.backoff import BackoffPolicy
from leaderworkerset.core.lifecycle.backoffsource import (
    SOURCE_ANNOTATION,
    SOURCE_FIELD,
    backoff_notes,
    condition_checks,
    effective_backoff,
)
from leaderworkerset.core.objects import Obj
from tests.support.builders import cached_lws


def _lws(
    field: tuple[int | None, int | None] | None, annotation: str | None, *, hash_identity: bool = False
) -> Obj:
    builder = cached_lws("lws")
    if hash_identity:
        builder = builder.group_identity(c.GROUP_IDENTITY_HASH)
    if field is not None:
        builder = builder.restart_backoff(*field)
    if annotation is not None:
        builder = builder.annotation(ext.ANNOTATION_RESTART_BACKOFF, annotation)
    return builder.obj()


@dataclass(frozen=True)
class Case:
    field: tuple[int | None, int | None] | None
    annotation: str | None
    source: str | None
    policy: BackoffPolicy | None
    overridden: bool = False
    rule: str = ""


CASES = [
    pytest.param(Case(None, None, None, None), id="neither: no back-off, as upstream"),
    pytest.param(
        Case(None, "base=2s,cap=8s", SOURCE_ANNOTATION, BackoffPolicy(2, 8, 16)), id="annotation only"
    ),
    pytest.param(Case((2, 8), None, SOURCE_FIELD, BackoffPolicy(2, 8, 16)), id="field only: reset is 2x cap"),
    pytest.param(
        Case((None, None), None, SOURCE_FIELD, BackoffPolicy(10, 300, 600)), id="empty field: the defaults"
    ),
    pytest.param(
        Case((20, None), None, SOURCE_FIELD, BackoffPolicy(20, 300, 600)), id="field without cap: default cap"
    ),
    pytest.param(
        Case((2, 8), "base=1m,cap=5m", SOURCE_FIELD, BackoffPolicy(2, 8, 16), overridden=True),
        id="both: the field wins, the annotation is overridden",
    ),
    pytest.param(
        Case((2, 8), "base=0s", SOURCE_FIELD, BackoffPolicy(2, 8, 16), overridden=True),
        id="both, the annotation unusable: still the field",
    ),
    pytest.param(
        Case((0, 8), "base=1s", SOURCE_FIELD, None, overridden=True, rule="base-positive"),
        id="both, the field unusable: no back-off, never a fall-back to the annotation",
    ),
    pytest.param(
        Case((600, None), None, SOURCE_FIELD, None, rule="base-above-cap"), id="field base above default cap"
    ),
    pytest.param(
        Case(None, "base=0s", SOURCE_ANNOTATION, None, rule="base-positive"), id="annotation unusable"
    ),
]
RAN: list[str] = []


@pytest.mark.parametrize("case", CASES)
def test_precedence(case: Case, request: pytest.FixtureRequest) -> None:
    effective = effective_backoff(_lws(case.field, case.annotation))
    assert (effective.source, effective.policy, effective.overridden) == (
        case.source,
        case.policy,
        case.overridden,
    )
    assert effective.rule == case.rule
    assert (effective.problem is None) == (case.rule == "")
    RAN.append(request.node.callspec.id)


def test_every_precedence_case_ran() -> None:
    assert len(RAN) == len(CASES) == 10


def test_a_hash_set_is_refused_for_the_field_as_for_the_annotation() -> None:
    for lws in (_lws((10, 300), None, hash_identity=True), _lws(None, "base=10s", hash_identity=True)):
        effective = effective_backoff(lws)
        assert (effective.policy, effective.rule) == (None, "hash-identity")


def _checks(lws: Obj) -> dict[str, tuple[str | None, str | None, str]]:
    return {
        kind: (message, None if event is None else event.reason, reason)
        for kind, message, event, reason in condition_checks(lws)
    }


def test_an_unusable_field_is_flagged_with_its_path_and_rule() -> None:
    checks = _checks(_lws((0, 300), None))
    message, event, reason = checks[ext.CONDITION_RESTART_BACKOFF_INVALID]
    assert message == (
        "spec.leaderWorkerTemplate.restartBackoff ignored (base-positive): "
        "spec.leaderWorkerTemplate.restartBackoff.baseSeconds: must be greater than 0 (got 0)"
    )
    assert (event, reason) == (ext.EVENT_INVALID_RESTART_BACKOFF, ext.REASON_INVALID_FIELD)
    assert checks[ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN] == (None, None, ext.REASON_ANNOTATION_OVERRIDDEN)


def test_an_overridden_annotation_is_flagged_with_an_event() -> None:
    checks = _checks(_lws((10, 300), "base=1s"))
    assert checks[ext.CONDITION_RESTART_BACKOFF_INVALID][0] is None
    message, event, reason = checks[ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN]
    assert message is not None
    assert ext.ANNOTATION_RESTART_BACKOFF in message
    assert "overridden by spec.leaderWorkerTemplate.restartBackoff" in message
    assert (event, reason) == (ext.EVENT_RESTART_BACKOFF_OVERRIDDEN, ext.REASON_ANNOTATION_OVERRIDDEN)


def test_nothing_is_flagged_for_a_set_without_a_back_off() -> None:
    assert [message for _, message, _, _ in condition_checks(_lws(None, None))] == [None, None]


@pytest.mark.parametrize(
    ("field", "annotation", "want"),
    [
        pytest.param(None, None, [], id="none"),
        pytest.param(
            (10, 300),
            None,
            ["restart back-off from spec.leaderWorkerTemplate.restartBackoff: base 10s, cap 5m, reset 10m"],
            id="field",
        ),
        pytest.param(
            None,
            "base=2s",
            ["restart back-off from leaderworkerset.dev/restart-backoff: base 2s, cap 5m, reset 10m"],
            id="annotation",
        ),
        pytest.param(
            (10, 60),
            "base=2s",
            [
                "restart back-off from spec.leaderWorkerTemplate.restartBackoff: base 10s, cap 1m, reset 2m",
                "annotation leaderworkerset.dev/restart-backoff is overridden by "
                "spec.leaderWorkerTemplate.restartBackoff: the field's back-off applies and the annotation "
                "is ignored",
            ],
            id="both",
        ),
    ],
)
def test_status_lines(field: tuple[int, int] | None, annotation: str | None, want: list[str]) -> None:
    assert backoff_notes(_lws(field, annotation)) == want
