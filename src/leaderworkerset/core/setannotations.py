"""The rules of this project's opt-in `leaderworkerset.dev/` annotations on a set (LeaderWorkerSet,
DisaggregatedSet), in one table.

The webhook (`webhooks/setannotations.py`) refuses a value that breaks its rule, naming the
annotation and the rule; with the webhooks off the controller reads the same table, flags the value
in the rule's condition with a Warning event, and ignores it (the feature stays off, as upstream).
A new annotation adds a row here (and its key to `api/extensions.py`): admission, the condition and
the event follow without a second list to keep in step. Rows may share a condition (the two node
quarantine annotations): it then names every bad one, in one message and one event.

The older annotations (restart back-off, rollout control, not-ready events) keep their own modules
for now; their rules would move here unchanged, as node quarantine's did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.disruptionbudget import annotation as disruptionbudget
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.core.objects import ControllerEvent, Obj, annotations_of
from leaderworkerset.core.quarantine import policy as quarantine
from leaderworkerset.core.rollout.inplaceupdate.planning import update_strategy_problem
from leaderworkerset.core.rollout.surgefallback import decision as surgefallback

# `problem(value, object)`: the rule the value breaks on this object, or None when it is valid.
Problem = Callable[[str, Obj], str | None]


@dataclass(frozen=True)
class SetAnnotationRule:
    key: str
    kinds: frozenset[str]  # the kinds of set that may carry it
    problem: Problem
    condition: str  # the condition type that flags a bad value (webhooks off)
    event_reason: str  # the Warning event that says so
    ignored: str  # what the controller does with a bad value, for the condition's message (one per condition)


RULES: tuple[SetAnnotationRule, ...] = (
    SetAnnotationRule(
        key=ext.ANNOTATION_SURGE_FALLBACK_SECONDS,
        kinds=frozenset({c.LWS_KIND, c.DS_KIND}),
        problem=surgefallback.seconds_problem,
        condition=ext.CONDITION_SURGE_FALLBACK_INVALID,
        event_reason=ext.EVENT_INVALID_SURGE_FALLBACK,
        ignored="the surge is never given back (as upstream)",
    ),
    SetAnnotationRule(
        key=ext.ANNOTATION_DISRUPTION_BUDGET,
        kinds=frozenset({c.LWS_KIND}),
        problem=disruptionbudget.budget_problem,
        condition=ext.CONDITION_DISRUPTION_BUDGET_INVALID,
        event_reason=ext.EVENT_INVALID_DISRUPTION_BUDGET,
        ignored="no PodDisruptionBudget is managed for this set",
    ),
    *(
        SetAnnotationRule(
            key=key,
            kinds=frozenset({c.LWS_KIND}),
            problem=problem,
            condition=ext.CONDITION_QUARANTINE_ANNOTATION_INVALID,
            event_reason=ext.EVENT_INVALID_QUARANTINE,
            ignored="no node is quarantined",
        )
        for key, problem in (
            (ext.ANNOTATION_QUARANTINE_AFTER, quarantine.after_problem),
            (ext.ANNOTATION_QUARANTINE_COOLDOWN, quarantine.cooldown_problem),
            (ext.ANNOTATION_QUARANTINE_MODE, quarantine.mode_problem),
        )
    ),
    SetAnnotationRule(
        key=ext.ANNOTATION_UPDATE_STRATEGY,
        kinds=frozenset({c.LWS_KIND}),
        problem=update_strategy_problem,
        condition=ext.CONDITION_UPDATE_STRATEGY_INVALID,
        event_reason=ext.EVENT_INVALID_UPDATE_STRATEGY,
        ignored="every template change recreates groups (as upstream)",
    ),
    SetAnnotationRule(
        key=ext.ANNOTATION_RESTART_STRATEGY,
        kinds=frozenset({c.LWS_KIND}),
        problem=inplacerestart.restart_strategy_problem,
        condition=ext.CONDITION_RESTART_STRATEGY_INVALID,
        event_reason=ext.EVENT_INVALID_RESTART_STRATEGY,
        ignored="failed groups are recreated (as upstream)",
    ),
)


def annotation_errors(obj: Obj, kind: str) -> list[tuple[SetAnnotationRule, AnnotationError]]:
    """Every annotation of `obj` (a set of `kind`) that breaks its rule, with the rule."""
    annotations = annotations_of(obj)
    found = []
    for rule in RULES:
        if kind not in rule.kinds or rule.key not in annotations:
            continue
        value = str(annotations[rule.key])
        problem = rule.problem(value, obj)
        if problem is not None:
            found.append((rule, AnnotationError(rule.key, value, problem)))
    return found


def invalid_message(rule: SetAnnotationRule, *errors: AnnotationError) -> str:
    return "; ".join([*(error.message for error in errors), rule.ignored])


def invalid_event(rule: SetAnnotationRule, *errors: AnnotationError) -> ControllerEvent:
    return ControllerEvent(
        c.EVENT_TYPE_WARNING, rule.event_reason, c.EVENT_ACTION_RECONCILE, invalid_message(rule, *errors)
    )


def flag_checks(obj: Obj, kind: str) -> list[tuple[str, str | None, ControllerEvent | None]]:
    """(condition type, message or None to clear, event) per rule of `kind`: what the controller
    writes for each with the webhooks off (`core.desired.statuswrite.annotation_status`)."""
    bad: dict[str, list[AnnotationError]] = {}
    for rule, error in annotation_errors(obj, kind):
        bad.setdefault(rule.condition, []).append(error)
    checks: list[tuple[str, str | None, ControllerEvent | None]] = []
    seen: set[str] = set()
    for rule in RULES:
        if kind not in rule.kinds or rule.condition in seen:
            continue
        seen.add(rule.condition)
        if errors := bad.get(rule.condition):
            checks.append((rule.condition, invalid_message(rule, *errors), invalid_event(rule, *errors)))
        else:
            checks.append((rule.condition, None, None))
    return checks
