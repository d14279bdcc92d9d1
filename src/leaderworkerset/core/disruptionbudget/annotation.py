"""The `leaderworkerset.dev/disruption-budget` annotation: its one parser and rule.

Its rule is a row of the set-annotation table (`core/setannotations.py`): the webhook rejects a value
that breaks it, and with the webhooks off the LWS controller reports it (condition
`DisruptionBudgetInvalid`, a Warning event); the disruption-budget controller parses with the same
function here and treats a set with a bad value as not opted in.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.gocompat.strconv import GoParseError, go_atoi
from leaderworkerset.core.objects import Obj, annotations_of, lws_replicas

RULE = "must be a whole number of groups of at least 1, or a percentage from 1% to 100%"


@dataclass(frozen=True)
class DisruptionBudget:
    """A valid annotation value: `groups` whole groups, or `percent` of spec.replicas."""

    groups: int | None = None
    percent: int | None = None

    def groups_for(self, replicas: int) -> int:
        """How many groups may be down at once; a percentage is rounded up (as a PDB's
        maxUnavailable), and a set is always allowed one group, or no drain could ever finish."""
        if self.groups is not None:
            return self.groups
        return max(1, -(-(self.percent or 0) * replicas // 100))


def _parse(value: str) -> DisruptionBudget | None:
    text, percent = (value[:-1], True) if value.endswith("%") else (value, False)
    try:
        number = go_atoi(text)
    except GoParseError:
        return None
    if percent:
        return DisruptionBudget(percent=number) if 1 <= number <= 100 else None
    return DisruptionBudget(groups=number) if number >= 1 else None


def disruption_budget(lws: Obj) -> tuple[DisruptionBudget | None, AnnotationError | None]:
    """The set's budget (None: not opted in, or a bad value) and the error of a bad value."""
    value = annotations_of(lws).get(ext.ANNOTATION_DISRUPTION_BUDGET)
    if value is None:
        return None, None
    budget = _parse(str(value))
    if budget is None:
        return None, AnnotationError(ext.ANNOTATION_DISRUPTION_BUDGET, str(value), RULE)
    return budget, None


def budget_groups(lws: Obj) -> int | None:
    """Groups the set's budget allows down at once; None when it has no (valid) budget."""
    budget, _ = disruption_budget(lws)
    return None if budget is None else budget.groups_for(lws_replicas(lws))


def budget_problem(value: str, _lws: Obj) -> str | None:
    """The rule a value breaks (None: valid), for the set-annotation table (`core/setannotations.py`)."""
    return None if _parse(value) is not None else RULE
