"""`lws rollout history` and the rollout notes of `lws status` / `lws plan`, rendered at a fixed
width (snapshots)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from leaderworkerset.api import extensions as ext
from leaderworkerset.cli.plan import render as render_plan
from leaderworkerset.cli.rollout import history_table, template_diff
from leaderworkerset.cli.views.lws import document, render
from leaderworkerset.core.objects import revision_key_of
from leaderworkerset.core.plan import plan_leaderworkerset
from leaderworkerset.core.rollout.revision import new_revision
from leaderworkerset.core.rollout.undo import undone
from tests.support.builders import cached_lws
from tests.unit.cli.test_status_why import plain, snapshot
from tests.unit.core.test_plan import NEW_IMAGE, gpu_lws, live_state, lws_plan

WIDTH = 100


def text(renderable: object) -> str:
    console = Console(width=WIDTH, record=True, color_system=None)
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


HISTORY = """\
                                    LeaderWorkerSet default/plan
┏━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┓
┃ revision ┃ key        ┃ created              ┃ images                                  ┃         ┃
┡━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━┩
│ 1        │ 64759f95c7 │ 2026-12-01T12:00:00Z │ docker.io/nginxinc/nginx-unprivileged:1 │         │
│          │            │                      │ .27                                     │         │
│          │            │                      │ registry/app:v1                         │         │
│ 2        │ 6848745f4  │ 2026-12-01T12:01:00Z │ docker.io/nginxinc/nginx-unprivileged:1 │ current │
│          │            │                      │ .27                                     │         │
│          │            │                      │ registry/app:v2                         │         │
└──────────┴────────────┴──────────────────────┴─────────────────────────────────────────┴─────────┘"""


def test_history_lists_revisions_oldest_first_and_marks_the_current_one() -> None:
    revisions: list[dict[str, object]] = []
    for image in ("registry/app:v1", "registry/app:v2"):
        revision = new_revision(gpu_lws().worker_image(image).obj(), "", revisions)
        revision["metadata"]["creationTimestamp"] = f"2026-12-01T12:0{len(revisions)}:00Z"
        revisions.append(revision)
    lws = gpu_lws().worker_image("registry/app:v2").obj()
    assert [revision_key_of(r) for r in revisions] == ["64759f95c7", "6848745f4"]  # golden keys
    assert text(history_table(lws, list(reversed(revisions)), "6848745f4")) == HISTORY


PAUSED_CONDITION = {
    "type": ext.CONDITION_ROLLOUT_PAUSED,
    "status": "True",
    "reason": "Paused",
    "message": "m",
}
HALTED_CONDITION = {
    "type": ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED,
    "status": "True",
    "reason": "FailedScheduling",
    "message": (
        "no progress for 60s, rollout halted with 1 group(s) not ready; group 1: worker lws-1-1 unschedulable"
    ),
}


def test_status_tree_says_the_rollout_is_paused_and_halted() -> None:
    snap = snapshot()
    snap.lws["status"]["conditions"] += [PAUSED_CONDITION, HALTED_CONDITION]
    lines = plain(render(snap)).splitlines()
    assert lines[0].endswith("Progressing, RolloutPaused, RolloutProgressDeadlineExceeded")
    assert lines[1:3] == [
        "├── rollout paused: the partition and surge hold until `lws rollout resume`",
        "├── rollout halted at its progress deadline (FailedScheduling): no progress for 60s, rollout halted "
        "with 1 group(s) not ready; group 1: worker lws-1-1 unschedulable",
    ]
    assert document(snap)["rollout"] == [line[4:] for line in lines[1:3]]


def test_status_of_a_set_without_rollout_control_has_no_rollout_lines() -> None:
    snap = snapshot()
    assert "rollout" not in plain(render(snap))
    assert "rollout" not in document(snap)


def test_plan_warns_that_a_paused_rollout_takes_no_step() -> None:
    live = gpu_lws().annotation(ext.ANNOTATION_ROLLOUT_PAUSED, "true").obj()
    new = gpu_lws().worker_image(NEW_IMAGE).obj()
    shown = text(render_plan(lws_plan(live, new)))
    assert shown.splitlines()[-1] == (
        "warning: rollout paused: the controller takes none of these steps until `lws rollout resume`"
    )
    assert "rollout paused" not in text(render_plan(lws_plan(gpu_lws().obj(), new)))


def test_undo_prints_the_template_diff_in_gos_view() -> None:
    """The diff `lws rollout undo` prints: both templates as Go renders them, so defaults the API
    server filled in show no noise, and only the undone lines differ."""
    base = cached_lws("lws")
    revisions: list[dict[str, Any]] = []
    for image in ("v1", "v3"):
        revisions.append(new_revision(base.worker_image(image).obj(), "", revisions))
    live = base.worker_image("v3").obj()
    restored = undone(live, revisions[0])
    assert template_diff(live, restored) == (
        "--- live\n+++ undo\n@@ -6,5 +6,5 @@\n     spec:\n       containers:\n"
        "-      - image: v3\n+      - image: v1\n         name: worker\n         ports:"
    )
    assert template_diff(live, live) == ""


EMULATION_LINE = (
    "this cluster rolls one group at a time: the API server dropped maxUnavailable from the leader "
    "StatefulSet (feature gate MaxUnavailableStatefulSet is off), so the LeaderWorkerSet controller "
    "replaces up to 2 groups at a time itself"
)


def test_plan_says_the_cluster_rolls_one_group_at_a_time() -> None:
    """The leader StatefulSet stored without maxUnavailable (gate off): the line, not a warning."""
    live = gpu_lws(surge=1, unavailable=1).obj()
    new = gpu_lws(surge=1, unavailable=1).worker_image(NEW_IMAGE).obj()
    result = lws_plan(live, new)
    assert result.notes == (EMULATION_LINE,)
    assert EMULATION_LINE not in result.warnings
    assert EMULATION_LINE in text(render_plan(result)).replace("\n", " ")


def test_plan_has_no_such_line_where_the_statefulset_keeps_max_unavailable() -> None:
    live = gpu_lws(surge=1, unavailable=1).obj()
    new = gpu_lws(surge=1, unavailable=1).worker_image(NEW_IMAGE).obj()
    sts, revisions = live_state(live)
    sts["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = 2
    result = plan_leaderworkerset(live, new, leader_statefulset=sts, revisions=revisions)
    assert result.notes == ()
    assert lws_plan(gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj()).notes == ()  # wants 1


def test_status_tree_says_the_cluster_rolls_one_group_at_a_time() -> None:
    snap = snapshot()
    snap.lws["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 2, "maxSurge": 0},
    }
    assert plain(render(snap)).splitlines()[1] == "├── " + EMULATION_LINE
    assert document(snap)["rollout"] == [EMULATION_LINE]
    snap.statefulsets[0]["spec"] = {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 2}}}
    assert "rollout" not in document(snap)
