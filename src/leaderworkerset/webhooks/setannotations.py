"""Admission of this project's opt-in set annotations (`core/setannotations.py`'s table).

Apart from upstream's rules, which keep upstream's exact messages: an object without any of these
annotations is admitted exactly as upstream admits it. The controller applies the same rules when
the webhooks are off (and reports a bad value in a condition instead).
"""

from __future__ import annotations

from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.objects import Obj
from leaderworkerset.core.setannotations import annotation_errors


def validate_set_annotations(obj: Obj, kind: str) -> list[v.FieldError]:
    """One error per bad annotation, naming the annotation and the rule it breaks."""
    return [
        v.invalid(
            f"metadata.annotations.{error.key}",
            v.go_quote(error.value),
            error.rule,
            rule.admission_code(error),
        )
        for rule, error in annotation_errors(obj, kind)
    ]
