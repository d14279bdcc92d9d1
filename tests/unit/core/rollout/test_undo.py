"""`lws rollout undo`, pure: the revision it picks and the spec it writes."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.core.objects import revision_key_of
from leaderworkerset.core.rollout import undo
from leaderworkerset.core.rollout.revision import new_revision
from tests.support.builders import cached_lws

Obj = dict[str, Any]


def _revisions() -> tuple[Obj, list[Obj]]:
    """Revisions 1 (image v1), 2 (v2) and 3 (v3) of one set."""
    base = cached_lws("lws")
    revisions: list[Obj] = []
    for image in ("v1", "v2", "v3"):
        live = base.worker_image(image).obj()
        revisions.append(new_revision(live, "", revisions))
    return base.worker_image("v3").obj(), revisions


@dataclass(frozen=True)
class UndoCase:
    current: int  # index of the current revision
    to_revision: int | None
    want: int | None  # revision number chosen, None: refused
    want_error: str = ""
    keep: tuple[int, ...] = (0, 1, 2)


UNDO_CASES = [
    pytest.param(UndoCase(2, None, 2), id="previous: the newest other revision"),
    pytest.param(UndoCase(2, 1, 1), id="to an explicit revision"),
    pytest.param(UndoCase(1, None, 3), id="current is in the middle: the newest other one"),
    pytest.param(UndoCase(2, 3, None, "is the current revision"), id="to the current revision"),
    pytest.param(UndoCase(2, 7, None, "revision 7 not found (revisions: 1, 2, 3)"), id="unknown number"),
    pytest.param(UndoCase(2, None, None, "no previous revision", keep=(2,)), id="history truncated"),
]


@pytest.mark.parametrize("case", UNDO_CASES)
def test_undo_picks_an_existing_revision(case: UndoCase) -> None:
    lws, revisions = _revisions()
    kept = [revisions[i] for i in case.keep]
    current = revision_key_of(revisions[case.current])
    if case.want is None:
        with pytest.raises(undo.UndoError, match=case.want_error.replace("(", r"\(").replace(")", r"\)")):
            undo.undo_target(lws, kept, current, case.to_revision)
        return
    assert undo.undo_target(lws, kept, current, case.to_revision)["revision"] == case.want


def test_undone_spec_restores_the_revision_template_with_the_same_key() -> None:
    lws, revisions = _revisions()
    restored = undo.undone(lws, revisions[0])
    assert (
        restored["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] == "v1"
    )
    assert restored["spec"]["replicas"] == lws["spec"]["replicas"]  # only the templates change
    assert "status" not in restored
    # The controller would key the restored spec exactly as revision 1: the rollout goes back to it.
    assert revision_key_of(new_revision(restored, "", revisions)) == revision_key_of(revisions[0])


@pytest.mark.parametrize(
    ("stored", "live"), [(1, 5), (None, 5), (1, None)], ids=["both", "only live", "only stored"]
)
def test_undo_keeps_the_live_restart_budget(stored: int | None, live: int | None) -> None:
    """The budget is no part of a revision: undo restores the pods' template only, even
    from a revision an earlier build of ours wrote with the budget inside."""
    lws, revisions = _revisions()
    target = copy.deepcopy(revisions[0])
    if stored is not None:
        target["data"]["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = stored
    if live is not None:
        lws["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = live
    restored = undo.undone(lws, target)["spec"]["leaderWorkerTemplate"]
    assert restored.get("maxGroupRestarts") == live
    assert restored["workerTemplate"]["spec"]["containers"][0]["image"] == "v1"
