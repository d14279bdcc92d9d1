"""Status conditions (metav1.Condition) and their time stamps, and annotation errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext

Condition = dict[str, Any]


_EXCLUSIVE_PAIRS = frozenset(
    {
        frozenset({c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING}),
        frozenset({c.CONDITION_AVAILABLE, c.CONDITION_UPDATE_IN_PROGRESS}),
    }
)


def format_time(now: datetime) -> str:
    """metav1.Time's wire form: RFC 3339 in UTC with whole seconds (naive times are taken as UTC)."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_time_ms(when: datetime) -> str:
    """RFC 3339 in UTC with milliseconds, for our own records (the failure ledger) where delays of a
    few seconds must stay exact; Kubernetes' own fields use `format_time`."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def parse_time(text: object) -> datetime | None:
    """A time as the API server writes it (RFC 3339, ``Z`` or an offset, any fraction); None when
    absent or unreadable. The one parser of timestamps in the code base; a time without a zone is
    taken as UTC."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def exclusive_condition_types(first: str, second: str) -> bool:
    return frozenset({first, second}) in _EXCLUSIVE_PAIRS


def set_condition(conditions: list[Condition], new: Condition, now: datetime) -> bool:
    """Merge one condition into `conditions` in place; True when anything changed."""
    new = {**new, "lastTransitionTime": format_time(now)}
    found = False
    changed = False
    for i, current in enumerate(conditions):
        if current.get("type") == new["type"]:
            found = True
            if current.get("status") != new["status"] or current.get("observedGeneration", 0) != new.get(
                "observedGeneration", 0
            ):
                conditions[i] = dict(new)
                changed = True
        elif (
            exclusive_condition_types(str(current.get("type")), str(new["type"]))
            and new["status"] == c.CONDITION_TRUE
            and current.get("status") == c.CONDITION_TRUE
        ):
            # Only the status flips: reason and message of the losing condition are kept.
            conditions[i] = {
                **current,
                "status": c.CONDITION_FALSE,
                "lastTransitionTime": format_time(now),
                "observedGeneration": new.get("observedGeneration", 0),
            }
            changed = True
    if new["status"] == c.CONDITION_TRUE and not found:
        conditions.append(dict(new))
        changed = True
    return changed


def apply_conditions(
    stored: Sequence[Mapping[str, Any]], desired: Sequence[Condition], generation: int, now: datetime
) -> tuple[list[Condition], bool]:
    """Upstream's setConditions on a copy: short-circuit on first change, then bump generations."""
    conditions = [dict(cond) for cond in stored]
    changed = False
    for condition in desired:
        # Deliberately short-circuiting, like Go's `changed = changed || setCondition(...)`.
        changed = changed or set_condition(conditions, condition, now)
    for condition in conditions:
        if condition.get("observedGeneration", 0) != generation:
            condition["observedGeneration"] = generation
            changed = True
    return conditions, changed


def invalid_spec_conditions(
    stored: Sequence[Mapping[str, Any]], message: str, generation: int, now: datetime
) -> tuple[list[Condition], bool]:
    """The conditions with Progressing=False, reason InvalidSpec and `message` (the others kept);
    changed only when that condition is not already stored as such, so retries write nothing."""
    wanted: Condition = {
        "type": c.CONDITION_PROGRESSING,
        "status": c.CONDITION_FALSE,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(now),
        "reason": c.REASON_INVALID_SPEC,
        "message": message,
    }
    conditions = [dict(cond) for cond in stored]
    for index, current in enumerate(conditions):
        if current.get("type") == c.CONDITION_PROGRESSING:
            if all(
                current.get(k) == wanted[k] for k in ("status", "reason", "message", "observedGeneration")
            ):
                return conditions, False
            if current.get("status") == wanted["status"]:
                wanted["lastTransitionTime"] = current.get("lastTransitionTime", wanted["lastTransitionTime"])
            conditions[index] = wanted
            return conditions, True
    return [*conditions, wanted], True


def invalid_annotation_conditions(
    lws: Mapping[str, Any],
    condition_type: str,
    message: str | None,
    now: str,
    reason: str = ext.REASON_INVALID_ANNOTATION,
) -> list[dict[str, Any]] | None:
    """The LWS's conditions with our `condition_type` True (one of this project's annotations holds a
    value the controller cannot use, admitted with the webhooks off; `message` says which and why) or
    removed (`message` None: fixed, or dropped). None when nothing changes, which is always the case
    for an LWS that never had a bad value: a set that does not opt in is never written here."""
    conditions = [dict(cond) for cond in (lws.get("status") or {}).get("conditions") or []]
    existing = next((cond for cond in conditions if cond.get("type") == condition_type), None)
    others = [cond for cond in conditions if cond is not existing]
    if message is None:
        return None if existing is None else others
    if (
        existing is not None
        and existing.get("status") == c.CONDITION_TRUE
        and existing.get("message") == message
    ):
        return None
    condition = {
        "type": condition_type,
        "status": c.CONDITION_TRUE,
        "observedGeneration": int((lws.get("metadata") or {}).get("generation") or 0),
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }
    return [*others, condition]


@dataclass(frozen=True)
class AnnotationError:
    """One bad annotation value: which key, what it holds, the rule it breaks."""

    key: str
    value: str
    rule: str
    # Which part of a rule with several parts the value breaks, as a stable identifier (restart
    # back-off's `base-positive`); "" for a rule of one part.
    part: str = ""

    @property
    def message(self) -> str:
        return f"annotation {self.key}: {self.value!r} is invalid: {self.rule}"
