"""The opt-in node-quarantine annotations of a LeaderWorkerSet, parsed and checked.

``leaderworkerset.dev/quarantine-after: "<failures>/<window>"`` (e.g. ``3/10m``) switches the feature
on; ``leaderworkerset.dev/quarantine-cooldown: "<duration>"`` says how long a quarantined node is
avoided (the window when absent: a node that needed ``window`` to prove itself bad gets as long to
recover; never shorter: the failures that quarantined a node must have left the window when it is
released, or they would quarantine it again at once). The webhook and the controller apply the same
rules (``after_problem``, ``cooldown_problem``, rows of the set-annotation table
``core/setannotations.py``): the webhook refuses a bad value, the controller (webhooks off) reports it
and quarantines nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.api import extensions as ext
from leaderworkerset.api.config import parse_go_duration
from leaderworkerset.core.conditions import AnnotationError
from leaderworkerset.core.objects import Obj, annotations_of

# The ledger keeps 100 entries per set: a higher threshold could never be reached.
MAX_FAILURES = 100


@dataclass(frozen=True)
class QuarantinePolicy:
    failures: int  # this many failures implicating one node ...
    window: float  # ... within this many seconds quarantine it ...
    cooldown: float  # ... for this many seconds


def _duration(text: str) -> float | None:
    try:
        seconds = parse_go_duration(text.strip())
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _window(after: str) -> float | None:
    return _duration(after.partition("/")[2])


def _after_rule(raw: str) -> str | None:
    count, sep, window = raw.partition("/")
    if not sep:
        return "must be <failures>/<window>, e.g. 3/10m"
    if not count.strip().isdigit() or not 1 <= int(count) <= MAX_FAILURES:
        return f"failures must be an integer from 1 to {MAX_FAILURES}"
    if _duration(window) is None:
        return "window must be a Go duration greater than 0, e.g. 10m"
    return None


def after_problem(value: str, _lws: Obj) -> str | None:
    """The rule a quarantine-after value breaks (None: valid), for the set-annotation table."""
    return _after_rule(value)


def cooldown_problem(value: str, lws: Obj) -> str | None:
    """The rule a quarantine-cooldown value breaks on this set (it depends on quarantine-after)."""
    after = annotations_of(lws).get(ext.ANNOTATION_QUARANTINE_AFTER)
    if _duration(value) is None:
        return "must be a Go duration greater than 0, e.g. 30m"
    if after is None:
        return f"takes effect only with {ext.ANNOTATION_QUARANTINE_AFTER}"
    if _after_rule(after) is None and (_duration(value) or 0) < (_window(after) or 0):
        return (
            "must not be shorter than the quarantine-after window: the failures that quarantined a node "
            "would quarantine it again the moment it is released"
        )
    return None


def mode_problem(value: str, lws: Obj) -> str | None:
    """The rule a quarantine-mode value breaks on this set."""
    modes = (ext.QUARANTINE_MODE_AFFINITY, ext.QUARANTINE_MODE_TAINT)
    if value not in modes:
        return f"must be {modes[0]} or {modes[1]}"
    if ext.ANNOTATION_QUARANTINE_AFTER not in annotations_of(lws):
        return f"takes effect only with {ext.ANNOTATION_QUARANTINE_AFTER}"
    return None


def quarantine_taints(lws: Obj) -> bool:
    """The set asks for its quarantined nodes to be tainted (and its quarantine is usable)."""
    mode = annotations_of(lws).get(ext.ANNOTATION_QUARANTINE_MODE)
    return mode == ext.QUARANTINE_MODE_TAINT and quarantine_policy(lws) is not None


def quarantine_errors(lws: Obj) -> list[AnnotationError]:
    """One error per quarantine annotation whose value breaks its rule (none when both are absent)."""
    annotations = annotations_of(lws)
    errors = []
    for key, problem in (
        (ext.ANNOTATION_QUARANTINE_AFTER, after_problem),
        (ext.ANNOTATION_QUARANTINE_COOLDOWN, cooldown_problem),
        (ext.ANNOTATION_QUARANTINE_MODE, mode_problem),
    ):
        value = annotations.get(key)
        if value is not None and (rule := problem(value, lws)) is not None:
            errors.append(AnnotationError(key, value, rule))
    return errors


def quarantine_policy(lws: Obj) -> QuarantinePolicy | None:
    """The set's policy; None when it does not opt in or a value is unusable (quarantine_errors)."""
    annotations = annotations_of(lws)
    after = annotations.get(ext.ANNOTATION_QUARANTINE_AFTER)
    if after is None or quarantine_errors(lws):
        return None
    window = _window(after)
    assert window is not None  # checked by quarantine_errors
    cooldown_text = annotations.get(ext.ANNOTATION_QUARANTINE_COOLDOWN)
    cooldown = _duration(cooldown_text) if cooldown_text is not None else window
    return QuarantinePolicy(int(after.partition("/")[0]), window, cooldown or window)


def quarantine_opted_in(lws: Obj) -> bool:
    """The set asks for quarantine (valid or not): its failures must be kept in the ledger."""
    return ext.ANNOTATION_QUARANTINE_AFTER in annotations_of(lws)
