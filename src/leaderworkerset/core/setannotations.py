"""The rules of this project's opt-in `leaderworkerset.dev/` annotations on a set (LeaderWorkerSet,
DisaggregatedSet), and of upstream main's annotations this controller does not act on, in one table.

The webhook (`webhooks/setannotations.py`) refuses a value that breaks its rule, naming the
annotation and the rule; with the webhooks off the controller reads the same table, flags the value
in the rule's condition with a Warning event, and ignores it (the feature stays off, as upstream).
A new annotation adds a row here (and its key to `api/extensions.py`): admission, the condition and
the event follow without a second list to keep in step. Rows may share a condition (the two node
quarantine annotations): it then names every bad one, in one message and one event.

The rule itself stays with its feature (the `*_problem` functions), where the feature reads the
annotation with it too. Rollout control's two rows and the restart back-off's name no condition
here: their own conditions (`core/rollout/control.py`, `core/lifecycle/backoffsource.py`) report a
bad value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.api import upstreammain as um
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.disaggregated.revision import revision_hash_version_problem
from leaderworkerset.core.disruptionbudget import annotation as disruptionbudget
from leaderworkerset.core.lifecycle import backoff, inplacerestart
from leaderworkerset.core.objects import ControllerEvent, Obj, annotations_of
from leaderworkerset.core.observe import notready
from leaderworkerset.core.quarantine import policy as quarantine
from leaderworkerset.core.rollout import control as rolloutcontrol
from leaderworkerset.core.rollout.inplaceupdate.planning import update_strategy_problem
from leaderworkerset.core.rollout.surgefallback import decision as surgefallback

# `problem(value, object)`: the rule the value breaks on this object, or None when it is valid.
Problem = Callable[[str, Obj], str | None]
LWS_ONLY = frozenset({c.LWS_KIND})


@dataclass(frozen=True)
class SetAnnotationRule:
    key: str
    kinds: frozenset[str]  # the kinds of set that may carry it
    problem: Problem
    # The condition type that flags a bad value (webhooks off); None: the feature's own conditions do.
    condition: str | None
    event_reason: str = ""  # the Warning event that says so
    # What the controller does with a bad value, for the condition's message (one per condition).
    ignored: str = ""
    code: str = "set-annotation"  # the rule identifier of admission's field error
    # A rule of several parts: which one a value breaks, appended to `code` and named by `message`.
    part: Callable[[str, Obj], str] | None = None
    # The condition's and event's words for a bad value, where they are not "<error>; <ignored>".
    message: Callable[[AnnotationError], str] | None = None
    event_action: str = c.EVENT_ACTION_RECONCILE

    def admission_code(self, error: AnnotationError) -> str:
        return f"{self.code}-{error.part}" if error.part else self.code


RULES: tuple[SetAnnotationRule, ...] = (
    # Its condition is the back-off's own (core/lifecycle/backoffsource.py): the typed field, when
    # set, decides instead of the annotation, so the flag depends on more than this value.
    SetAnnotationRule(
        key=ext.ANNOTATION_RESTART_BACKOFF,
        kinds=LWS_ONLY,
        problem=backoff.backoff_problem,
        condition=None,
        code="restart-backoff",
        part=backoff.broken_part,
    ),
    *(
        SetAnnotationRule(
            key=key,
            kinds=LWS_ONLY,
            problem=problem,
            condition=None,
            code="rollout-annotation",
        )
        for key, problem in (
            (ext.ANNOTATION_ROLLOUT_PAUSED, rolloutcontrol.paused_problem),
            (ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE, rolloutcontrol.deadline_problem),
        )
    ),
    SetAnnotationRule(
        key=ext.ANNOTATION_NOT_READY_EVENTS,
        kinds=LWS_ONLY,
        problem=notready.not_ready_events_problem,
        condition=ext.CONDITION_NOT_READY_EVENTS_INVALID,
        event_reason=ext.EVENT_INVALID_NOT_READY_EVENTS,
        ignored="no GroupNotReady events are recorded",
        code="not-ready-events",
    ),
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
        kinds=LWS_ONLY,
        problem=disruptionbudget.budget_problem,
        condition=ext.CONDITION_DISRUPTION_BUDGET_INVALID,
        event_reason=ext.EVENT_INVALID_DISRUPTION_BUDGET,
        ignored="no PodDisruptionBudget is managed for this set",
    ),
    *(
        SetAnnotationRule(
            key=key,
            kinds=LWS_ONLY,
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
        kinds=LWS_ONLY,
        problem=update_strategy_problem,
        condition=ext.CONDITION_UPDATE_STRATEGY_INVALID,
        event_reason=ext.EVENT_INVALID_UPDATE_STRATEGY,
        ignored="every template change recreates groups (as upstream)",
    ),
    SetAnnotationRule(
        key=ext.ANNOTATION_RESTART_STRATEGY,
        kinds=LWS_ONLY,
        problem=inplacerestart.restart_strategy_problem,
        condition=ext.CONDITION_RESTART_STRATEGY_INVALID,
        event_reason=ext.EVENT_INVALID_RESTART_STRATEGY,
        ignored="failed groups are recreated (as upstream)",
    ),
    SetAnnotationRule(
        key=um.ANNOTATION_DS_REVISION_HASH_VERSION,
        kinds=frozenset({c.DS_KIND}),
        problem=revision_hash_version_problem,
        condition=um.CONDITION_REVISION_HASH_VERSION_UNSUPPORTED,
        event_reason=um.EVENT_UNSUPPORTED_REVISION_HASH_VERSION,
        ignored="the set keeps the v1.0 revision hash",
        code="revision-hash-version",
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
            part = rule.part(value, obj) if rule.part is not None else ""
            found.append((rule, AnnotationError(rule.key, value, problem, part)))
    return found


def invalid_message(rule: SetAnnotationRule, *errors: AnnotationError) -> str:
    if rule.message is not None:
        return "; ".join(rule.message(error) for error in errors)
    return "; ".join([*(error.message for error in errors), rule.ignored])


def invalid_event(rule: SetAnnotationRule, *errors: AnnotationError) -> ControllerEvent:
    return ControllerEvent(
        c.EVENT_TYPE_WARNING, rule.event_reason, rule.event_action, invalid_message(rule, *errors)
    )


def flag_checks(obj: Obj, kind: str) -> list[tuple[str, str | None, ControllerEvent | None]]:
    """(condition type, message or None to clear, event) per condition of `kind`'s rules: what the
    controller writes for each with the webhooks off (`core.desired.statuswrite.annotation_status`)."""
    bad: dict[str, list[AnnotationError]] = {}
    for rule, error in annotation_errors(obj, kind):
        if rule.condition is not None:
            bad.setdefault(rule.condition, []).append(error)
    checks: list[tuple[str, str | None, ControllerEvent | None]] = []
    seen: set[str] = set()
    for rule in RULES:
        if kind not in rule.kinds or rule.condition is None or rule.condition in seen:
            continue
        seen.add(rule.condition)
        if errors := bad.get(rule.condition):
            checks.append((rule.condition, invalid_message(rule, *errors), invalid_event(rule, *errors)))
        else:
            checks.append((rule.condition, None, None))
    return checks
