"""`lws rollout undo`: the revision history of a set and the spec an undo writes."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from leaderworkerset.core.gocompat import gojson
from leaderworkerset.core.objects import Obj, revision_key_of
from leaderworkerset.core.rollout.revision import (
    owned_revisions,
    revision_number,
    stored_patch,
    with_live_settings,
)


class UndoError(ValueError):
    """No revision to go back to; the message says why."""


def history(lws: Obj, revisions: Iterable[Obj]) -> list[Obj]:
    """The LWS's ControllerRevisions (its own and adopted orphans), oldest first."""
    return sorted(owned_revisions(lws, revisions), key=revision_number)


def undo_target(lws: Obj, revisions: Iterable[Obj], current_key: str, to_revision: int | None = None) -> Obj:
    """The revision `lws rollout undo` applies: `to_revision` by number, else the newest one whose
    template differs from the current one (`current_key`, the leader StatefulSet's revision).

    Only revisions that exist are chosen: once a rollout completes the controller (like upstream's)
    deletes every other revision, so there is nothing to undo to until the next change.
    """
    known = history(lws, revisions)
    if to_revision is not None:
        chosen = next((r for r in reversed(known) if revision_number(r) == to_revision), None)
        if chosen is None:
            numbers = ", ".join(str(revision_number(r)) for r in known) or "none"
            raise UndoError(f"revision {to_revision} not found (revisions: {numbers})")
        if revision_key_of(chosen) == current_key:
            raise UndoError(f"revision {to_revision} is the current revision ({current_key})")
        return chosen
    older = [r for r in known if revision_key_of(r) != current_key]
    if not older:
        raise UndoError(
            f"no previous revision: only revision {current_key or '?'} exists (the controller deletes "
            "the others once a rollout completes; undo works while a rollout is under way, paused or halted)"
        )
    return older[-1]


def _without_directives(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_directives(v) for k, v in value.items() if k != "$patch"}
    if isinstance(value, list):
        return [_without_directives(v) for v in value]
    return value


def revision_templates(revision: Obj) -> dict[str, Any]:
    """The spec fields a revision stores (`leaderWorkerTemplate`, `networkConfig`), as stored."""
    patch = gojson.loads(stored_patch(revision))
    spec = (patch.get("spec") or {}) if isinstance(patch, Mapping) else {}
    keys = ("leaderWorkerTemplate", "networkConfig")
    return {key: _without_directives(spec[key]) for key in keys if key in spec}


def undone(lws: Obj, revision: Obj) -> dict[str, Any]:
    """The LWS with the revision's templates in its spec: an ordinary spec update. The live settings
    of the template (the restart budget) stay as they are: they are no part of a revision."""
    result = copy.deepcopy(dict(lws))
    spec = result.get("spec") or {}
    templates = revision_templates(revision)
    if "leaderWorkerTemplate" in templates:
        templates["leaderWorkerTemplate"] = with_live_settings(
            templates["leaderWorkerTemplate"], spec.get("leaderWorkerTemplate") or {}
        )
    result["spec"] = {**spec, **templates}
    result.pop("status", None)
    return result
