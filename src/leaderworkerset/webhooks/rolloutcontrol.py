"""Admission of the rollout-control annotations (`leaderworkerset.dev/rollout-*`).

One function, so the checks of this project's own annotations stay apart from upstream's rules
(which must keep upstream's exact messages). The rules themselves are `core.rollout.control`'s: the
controller applies the same ones when webhooks are off, and reports a bad value instead.
"""

from __future__ import annotations

from typing import Any

from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.rollout.control import rollout_control


def validate_rollout_annotations(lws: dict[str, Any]) -> list[v.FieldError]:
    """One error per bad annotation, naming the annotation and the rule it breaks."""
    return [
        v.invalid(
            f"metadata.annotations.{error.key}", v.go_quote(error.value), error.rule, "rollout-annotation"
        )
        for error in rollout_control(lws).errors
    ]
