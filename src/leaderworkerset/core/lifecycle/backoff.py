"""Opt-in restart back-off between recreations of the same group.

Upstream recreates a failed group at once, every time: a group whose container crashes on start is
torn down and rebuilt in a tight loop (lws#1048), each round rescheduling every pod of the group.
With ``leaderworkerset.dev/restart-backoff: "base=10s,cap=5m,reset=10m"`` on the LeaderWorkerSet,
the n-th recreation of a group in a row waits ``min(cap, base * 2**(n-2))`` after the previous one
(the first is immediate, as upstream). A failure at least ``reset`` after the group's previous
recreation starts the streak over: the group ran that long without failing, so it is healthy again.

Pure: parsing and arithmetic on seconds since the epoch. The shell keeps one ``GroupBackoff`` per
group (in the LWS's failure-ledger ConfigMap) and asks ``decide_backoff`` before each recreation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.api.config import parse_go_duration
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.objects import ControllerEvent, Obj, annotations_of, is_hash, labels_of, name_of

DEFAULT_CAP_SECONDS = 300.0
HASH_RULE = "restart back-off is supported with groupIdentity Ordinal only"
_KEYS = ("base", "cap", "reset")


class BackoffError(ValueError):
    """An unusable annotation value; `rule` is a stable identifier, the message names the rule."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class BackoffPolicy:
    base: float
    cap: float
    reset: float


def _duration(key: str, text: str) -> float:
    try:
        seconds = parse_go_duration(text)
    except ValueError as err:
        raise BackoffError(f"{key}-duration", f"{key} must be a duration such as 10s or 5m: {err}") from err
    if seconds <= 0:
        raise BackoffError(f"{key}-positive", f"{key} must be greater than 0, got {text}")
    return seconds


def parse_backoff(raw: str) -> BackoffPolicy:
    """``base=D[,cap=D][,reset=D]`` with Go durations; cap defaults to 5m (or base if longer),
    reset to twice the cap. Raises BackoffError naming the broken rule."""
    values: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise BackoffError("format", f"expected key=duration pairs separated by commas, got {part!r}")
        if key not in _KEYS:
            raise BackoffError("unknown-key", f"unknown key {key!r}; supported keys: {', '.join(_KEYS)}")
        if key in values:
            raise BackoffError("repeated-key", f"key {key!r} is given twice")
        values[key] = value
    if "base" not in values:
        raise BackoffError("base-required", "base is required")
    base = _duration("base", values["base"])
    cap = _duration("cap", values["cap"]) if "cap" in values else max(base, DEFAULT_CAP_SECONDS)
    if cap < base:
        raise BackoffError("cap-below-base", f"cap ({values['cap']}) must not be shorter than base")
    reset = _duration("reset", values["reset"]) if "reset" in values else 2 * cap
    if reset < cap:
        raise BackoffError(
            "reset-below-cap", f"reset ({values['reset']}) must not be shorter than cap: a group waiting "
            "out its delay would otherwise count as healthy"
        )  # fmt: skip
    return BackoffPolicy(base, cap, reset)


def backoff_policy(lws: Obj) -> BackoffPolicy | None:
    """The LWS's policy; None without the annotation. Raises BackoffError for a bad value, and
    for a Hash-identity set: its recreated group gets a new key, so no streak could follow a group
    from one incarnation to the next (refused rather than silently never backing off)."""
    raw = annotations_of(lws).get(ext.ANNOTATION_RESTART_BACKOFF)
    if raw is None:
        return None
    policy = parse_backoff(raw)
    if is_hash(lws):
        raise BackoffError("hash-identity", HASH_RULE)
    return policy


def _broken(value: str, lws: Obj) -> BackoffError | None:
    """What `backoff_policy` would raise for `value` on `lws` (the parse first, then the identity)."""
    try:
        parse_backoff(value)
    except BackoffError as err:
        return err
    return BackoffError("hash-identity", HASH_RULE) if is_hash(lws) else None


def backoff_problem(value: str, lws: Obj) -> str | None:
    """The rule `value` breaks on `lws`, or None (the set-annotation table's check)."""
    err = _broken(value, lws)
    return None if err is None else str(err)


def broken_part(value: str, lws: Obj) -> str:
    """Which part of the rule `value` breaks (`base-positive`, `hash-identity`, ...): the
    set-annotation table names it in admission's error and in the condition."""
    err = _broken(value, lws)
    return "" if err is None else err.rule


def delay_before(policy: BackoffPolicy, streak: int) -> float:
    """The wait after the previous recreation before recreation number `streak + 1` of a streak."""
    if streak <= 0:
        return 0.0
    # Capped before the power can overflow: 2**64 * base is far past any cap.
    return min(policy.cap, policy.base * float(2 ** min(streak - 1, 64)))


@dataclass(frozen=True)
class GroupBackoff:
    """Per-group state: the recreations of the current streak, when the last one happened and
    which leader incarnation it deleted (a retry of that same recreation never waits again)."""

    streak: int
    last: float
    leader_uid: str
    waiting_until: float | None = None  # set while a failure waits out its delay
    source: str = ""  # where the policy of the last recreation came from: "field" or "annotation"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"streak": self.streak, "last": self.last, "leaderUID": self.leader_uid}
        if self.waiting_until is not None:
            doc["waitingUntil"] = self.waiting_until
        if self.source:
            doc["source"] = self.source
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GroupBackoff | None:
        try:
            waiting = doc.get("waitingUntil")
            return cls(
                int(doc["streak"]),
                float(doc["last"]),
                str(doc.get("leaderUID") or ""),
                None if waiting is None else float(waiting),
                str(doc.get("source") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None  # unreadable state: the group starts a fresh streak


@dataclass(frozen=True)
class BackoffDecision:
    recreate: bool
    streak: int  # the streak the recreation (if any) belongs to, counting it
    delay: float  # the wait this recreation is subject to
    not_before: float  # when it may happen

    def remaining(self, now: float) -> float:
        return max(0.0, self.not_before - now)


def decide_backoff(
    policy: BackoffPolicy, state: GroupBackoff | None, *, now: float, leader_uid: str
) -> BackoffDecision:
    """Recreate now, or wait until `not_before`."""
    if state is not None and state.leader_uid == leader_uid:
        # This incarnation's recreation was already decided (the state is written before the
        # delete): finish it.
        return BackoffDecision(True, state.streak, 0.0, now)
    if state is None or now - state.last >= policy.reset:
        return BackoffDecision(True, 1, 0.0, now)
    delay = delay_before(policy, state.streak)
    not_before = state.last + delay
    return BackoffDecision(now >= not_before, state.streak + 1, delay, not_before)


def recreated_state(
    decision: BackoffDecision, *, now: float, leader_uid: str, source: str = ""
) -> GroupBackoff:
    """The state to store just before the recreation `decision` allowed is carried out."""
    return GroupBackoff(decision.streak, now, leader_uid, source=source)


def waiting_state(state: GroupBackoff, decision: BackoffDecision) -> GroupBackoff:
    return GroupBackoff(state.streak, state.last, state.leader_uid, decision.not_before, state.source)


def format_seconds(seconds: float) -> str:
    """A wait as an operator reads it: 40s, 2m30s, 1h5m (whole seconds, rounded up)."""
    total = max(0, int(-(-seconds // 1)))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def backoff_event(leader: Obj, decision: BackoffDecision, *, now: float) -> ControllerEvent:
    group = labels_of(leader).get(c.LABEL_GROUP_INDEX, "")
    message = (
        f"Backing off recreation {decision.streak} in a row of group {group}: next recreation in "
        f"{format_seconds(decision.remaining(now))} (delay {format_seconds(decision.delay)})"
    )
    return ControllerEvent(
        c.EVENT_TYPE_WARNING, ext.EVENT_GROUP_RESTART_BACKOFF, c.EVENT_ACTION_WAIT, message,
        ("Pod", name_of(leader)),
    )  # fmt: skip


def ignored_message(error: AnnotationError) -> str:
    """What the condition and the event say of a bad value (admitted with the webhooks off)."""
    return f"annotation {ext.ANNOTATION_RESTART_BACKOFF} ignored ({error.part}): {error.rule}"
