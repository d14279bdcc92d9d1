"""Admission of the opt-in restart back-off annotation (core/lifecycle/backoff.py) on a LeaderWorkerSet.

Kept apart from upstream's rules in webhooks/leaderworkerset.py: it checks only this project's own
annotation, and an object without it is admitted exactly as upstream admits it.
"""

from leaderworkerset.api import extensions as ext
from leaderworkerset.core.gocompat import fielderrors as v
from leaderworkerset.core.lifecycle.backoff import backoff_error
from leaderworkerset.core.objects import MutableObj
from leaderworkerset.webhooks import fields as f

PATH = f"metadata.annotations.{ext.ANNOTATION_RESTART_BACKOFF}"


def validate_restart_backoff(lws: MutableObj) -> list[v.FieldError]:
    annotations = f.string_map(f.child(lws, "metadata"), "annotations")
    raw = annotations.get(ext.ANNOTATION_RESTART_BACKOFF)
    if raw is None:
        return []
    err = backoff_error(lws)
    if err is None:
        return []
    return [v.invalid(PATH, v.go_quote(raw), str(err), f"restart-backoff-{err.rule}")]
