"""Admission of the opt-in not-ready-events annotation (core/observe/notready.py) on a LeaderWorkerSet.

Apart from upstream's rules, like the other annotations of this project: an object without it is
admitted exactly as upstream admits it. The rule is `core.observe.notready`'s, which the controller applies
too when webhooks are off (it then reports the value in a condition instead).
"""

from __future__ import annotations

from typing import Any

from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.observe.notready import not_ready_events_error


def validate_not_ready_events(lws: dict[str, Any]) -> list[v.FieldError]:
    error = not_ready_events_error(lws)
    if error is None:
        return []
    return [
        v.invalid(
            f"metadata.annotations.{error.key}", v.go_quote(error.value), error.rule, "not-ready-events"
        )
    ]
