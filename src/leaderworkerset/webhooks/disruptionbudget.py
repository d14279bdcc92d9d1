"""Admission of the opt-in disruption-budget annotation (core/lifecycle/disruption.py).

Kept apart from upstream's rules like the other annotations of this project: an object without it is
admitted exactly as upstream admits it. The controller applies the same rule when webhooks are off
and reports a bad value in a condition instead.
"""

from __future__ import annotations

from typing import Any

from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.lifecycle.disruption import disruption_budget


def validate_disruption_budget(lws: dict[str, Any]) -> list[v.FieldError]:
    _, error = disruption_budget(lws)
    if error is None:
        return []
    return [
        v.invalid(
            f"metadata.annotations.{error.key}", v.go_quote(error.value), error.rule, "disruption-budget"
        )
    ]
