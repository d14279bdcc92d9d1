"""Where a set's restart back-off comes from: the typed field or our annotation.

Upstream's main branch after v1.0 added ``spec.leaderWorkerTemplate.restartBackoff {baseSeconds,
capSeconds}`` (lws#1048) for the same problem our ``leaderworkerset.dev/restart-backoff`` annotation
solves. Both drive one machinery (`backoff.py`): the field becomes a `BackoffPolicy` with the
annotation's default reset (twice the cap). When both are set the field wins, because a manifest
written for upstream expects its field to act; the annotation is then reported as overridden (a
condition, a Warning event and a line in ``lws status``), never silently dropped.

This module holds the field's rules (the webhooks' and, with the webhooks off, the controller's
condition: one place), its defaulting, and the precedence. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.lifecycle import backoff
from leaderworkerset.core.objects import (
    RESTART_BACKOFF_DEFAULTS,
    ControllerEvent,
    MutableObj,
    Obj,
    annotations_of,
    spec_is_hash,
    spec_restart_backoff,
)

FIELD = "restartBackoff"
FIELD_PATH = f"spec.leaderWorkerTemplate.{FIELD}"
SOURCE_FIELD = "field"
SOURCE_ANNOTATION = "annotation"
BASE, CAP = "baseSeconds", "capSeconds"
# Restart policies that recreate a group, so a delay between recreations means something (an
# absent policy is defaulted to RecreateGroupOnPodRestart by the CRD before anyone reads it).
_RECREATING = (
    "",
    c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
    c.RESTART_POLICY_RECREATE_GROUP_AFTER_START,
)
POLICY_DETAIL = "restartBackoff is only supported when restartPolicy recreates the group"
POSITIVE_DETAIL = "must be greater than 0"
ORDER_DETAIL = "baseSeconds must not be greater than capSeconds"


@dataclass(frozen=True)
class FieldProblem:
    """One broken rule of the field: `where` is "" (the whole field) or a member's JSON name;
    `value` the member's value (None for the whole field); `rule` a stable identifier."""

    where: str
    value: int | None
    rule: str
    detail: str

    def path(self, spec_path: str) -> str:
        field = f"{spec_path}.leaderWorkerTemplate.{FIELD}"
        return f"{field}.{self.where}" if self.where else field

    def message(self, spec_path: str = "spec") -> str:
        value = "" if self.value is None else f" (got {self.value})"
        return f"{self.path(spec_path)}: {self.detail}{value}"


def field_of(spec: Obj) -> Mapping[str, Any] | None:
    """The `restartBackoff` object of a LeaderWorkerSet spec (or a DisaggregatedSet role's); None
    when absent or null."""
    template = spec.get("leaderWorkerTemplate")
    value = template.get(FIELD) if isinstance(template, Mapping) else None
    return value if isinstance(value, Mapping) else None


def _member(field: Mapping[str, Any], key: str) -> int | None:
    value = field.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def field_problems(spec: Obj) -> list[FieldProblem]:
    """Every rule the field of `spec` breaks (create and update alike); [] without the field. A
    missing member counts as its default, here as for the controller."""
    field = field_of(spec)
    if field is None:
        return []
    problems: list[FieldProblem] = []
    template = spec.get("leaderWorkerTemplate") or {}
    if template.get("restartPolicy", "") not in _RECREATING:
        problems.append(FieldProblem("", None, "policy", POLICY_DETAIL))
    if spec_is_hash(spec):
        # As the annotation: a recreated Hash group gets a new key, so no streak could follow it.
        problems.append(FieldProblem("", None, "hash-identity", backoff.HASH_RULE))
    given = {key: _member(field, key) for key in (BASE, CAP)}
    for key, value in given.items():
        if value is not None and value <= 0:
            rule = "base-positive" if key == BASE else "cap-positive"
            problems.append(FieldProblem(key, value, rule, POSITIVE_DETAIL))
    base, cap = (RESTART_BACKOFF_DEFAULTS[key] if value is None else value for key, value in given.items())
    if base > 0 and cap > 0 and base > cap:
        detail = ORDER_DETAIL
        if given[CAP] is None:
            detail += f" (capSeconds defaults to {cap})"
        elif given[BASE] is None:
            detail += f" (baseSeconds defaults to {base})"
        problems.append(FieldProblem(BASE, base, "base-above-cap", detail))
    return problems


def default_field(template: MutableObj) -> None:
    """The defaulting webhook: a present `restartBackoff` gets each missing member's default (so an
    empty ``{}`` becomes the default back-off); an absent one stays absent."""
    field = template.get(FIELD)
    if isinstance(field, dict):
        for key, default in RESTART_BACKOFF_DEFAULTS.items():
            if field.get(key) is None:
                field[key] = default


def field_policy(spec: Obj) -> backoff.BackoffPolicy | None:
    """The back-off a valid field asks for (None without one); reset is the annotation's default,
    twice the cap."""
    field = spec_restart_backoff(spec)
    if field is None:
        return None
    base, cap = float(field[BASE]), float(field[CAP])
    return backoff.BackoffPolicy(base, cap, 2 * cap)


@dataclass(frozen=True)
class EffectiveBackoff:
    """The back-off that applies to a set's recreations, and where it comes from."""

    source: str | None  # SOURCE_FIELD, SOURCE_ANNOTATION, or None: no back-off asked for
    policy: backoff.BackoffPolicy | None  # None: none asked for, or the source's value is unusable
    problem: str | None = None  # why the source's value is unusable (its rule); groups are recreated at once
    rule: str = ""  # the broken rule's identifier
    overridden: bool = False  # the annotation is set too, and the field wins


def effective_backoff(lws: Obj) -> EffectiveBackoff:
    spec = lws.get("spec") or {}
    field = field_of(spec)
    annotated = ext.ANNOTATION_RESTART_BACKOFF in annotations_of(lws)
    if field is not None:
        problems = field_problems(spec)
        if problems:
            first = problems[0]
            message = "; ".join(problem.message() for problem in problems)
            return EffectiveBackoff(SOURCE_FIELD, None, message, first.rule, annotated)
        return EffectiveBackoff(SOURCE_FIELD, field_policy(spec), overridden=annotated)
    if not annotated:
        return EffectiveBackoff(None, None)
    try:
        policy = backoff.backoff_policy(lws)
    except backoff.BackoffError as err:
        return EffectiveBackoff(SOURCE_ANNOTATION, None, str(err), err.rule)
    return EffectiveBackoff(SOURCE_ANNOTATION, policy)


def source_name(source: str | None) -> str:
    """How the source is named to an operator: the field's path or the annotation's key."""
    return FIELD_PATH if source == SOURCE_FIELD else ext.ANNOTATION_RESTART_BACKOFF


def policy_line(effective: EffectiveBackoff) -> str | None:
    """ "restart back-off from spec.leaderWorkerTemplate.restartBackoff: base 10s, cap 5m, reset
    10m", or the unusable value; None without a back-off."""
    if effective.source is None:
        return None
    where = source_name(effective.source)
    if effective.policy is None:
        return f"restart back-off from {where} unusable, groups are recreated at once: {effective.problem}"
    p = effective.policy
    fmt = backoff.format_seconds
    return f"restart back-off from {where}: base {fmt(p.base)}, cap {fmt(p.cap)}, reset {fmt(p.reset)}"


def overridden_message(effective: EffectiveBackoff) -> str | None:
    if not effective.overridden:
        return None
    return (
        f"annotation {ext.ANNOTATION_RESTART_BACKOFF} is overridden by {FIELD_PATH}: "
        "the field's back-off applies and the annotation is ignored"
    )


def backoff_notes(lws: Obj) -> list[str]:
    """`lws status` lines: the back-off in force and its source, and an overridden annotation."""
    effective = effective_backoff(lws)
    return [line for line in (policy_line(effective), overridden_message(effective)) if line is not None]


def unusable_message(effective: EffectiveBackoff) -> str | None:
    """The `RestartBackoffInvalid` message of an unusable source, None when it is usable."""
    if effective.problem is None:
        return None
    if effective.source == SOURCE_ANNOTATION:
        error = AnnotationError(ext.ANNOTATION_RESTART_BACKOFF, "", effective.problem, effective.rule)
        return backoff.ignored_message(error)
    return f"{FIELD_PATH} ignored ({effective.rule}): {effective.problem}"


def _warning(reason: str, action: str, message: str | None) -> ControllerEvent | None:
    return None if message is None else ControllerEvent(c.EVENT_TYPE_WARNING, reason, action, message)


def unusable_event(effective: EffectiveBackoff) -> ControllerEvent | None:
    """The Warning event of an unusable source (recorded when flagged, and by a recreation that
    does not back off because of it)."""
    return _warning(ext.EVENT_INVALID_RESTART_BACKOFF, c.EVENT_ACTION_DELETE, unusable_message(effective))


Check = tuple[str, str | None, ControllerEvent | None, str]


def condition_checks(lws: Obj) -> list[Check]:
    """(condition type, message or None to clear, event, reason) of the back-off's two conditions:
    `RestartBackoffInvalid` (the source in force is unusable) and `RestartBackoffOverridden`."""
    effective = effective_backoff(lws)
    reason = ext.REASON_INVALID_FIELD if effective.source == SOURCE_FIELD else ext.REASON_INVALID_ANNOTATION
    overridden = overridden_message(effective)
    override_event = _warning(ext.EVENT_RESTART_BACKOFF_OVERRIDDEN, c.EVENT_ACTION_RECONCILE, overridden)
    return [
        (
            ext.CONDITION_RESTART_BACKOFF_INVALID,
            unusable_message(effective),
            unusable_event(effective),
            reason,
        ),
        (
            ext.CONDITION_RESTART_BACKOFF_OVERRIDDEN,
            overridden,
            override_event,
            ext.REASON_ANNOTATION_OVERRIDDEN,
        ),
    ]
