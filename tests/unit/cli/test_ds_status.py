"""`lws status` of a DisaggregatedSet: the tree DS → roles → revisions → child LWS → groups."""

from typing import Any

from rich.console import Console

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um
from leaderworkerset.cli.views import ds as ds_status
from leaderworkerset.cli.views.lws import Snapshot
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from tests.support.builders import DisaggregatedSetBuilder
from tests.unit.core.disaggregated.helpers import DS_UID, NS, child


def text(tree: Any) -> str:
    console = Console(record=True, width=200, color_system=None)
    console.print(tree)
    return console.export_text()


def test_tree_shows_roles_with_ready_capacity_revisions_and_child_groups() -> None:
    ds = DisaggregatedSetBuilder(NS).uid(DS_UID).role("prefill", 2).role("decode", 1).obj()
    ds["metadata"]["name"] = "test-ds"
    target = disaggregated_revision(ds["spec"]["roles"])
    ds["status"] = {
        "conditions": [
            {"type": c.CONDITION_PROGRESSING, "status": "True", "reason": c.REASON_ROLLOUT_IN_PROGRESS}
        ]
    }
    children = [
        child("prefill", revision=target, spec=1, status=1, ready=1),
        child("prefill", revision="old00000", spec=1, status=1, ready=1),
        child("decode", revision=target, spec=1, status=1, ready=0),
    ]
    got = text(ds_status.render(ds_status.DSSnapshot(ds, [], [Snapshot(lws, [], []) for lws in children])))
    lines = got.splitlines()
    assert (
        f"DisaggregatedSet {NS}/test-ds  revision {target}  slices 1  Progressing (RolloutInProgress)"
        "  scaling during rollout: RolloutCoupled" in lines[0]
    )
    assert "role prefill  ready capacity 2/2  (2 per slice x 1)  asked 2" in got
    assert "role decode  ready capacity 0/1  (1 per slice x 1)  asked 1" in got
    assert f"revision {target}  target" in got
    assert "revision old00000  old, draining" in got
    assert f"LeaderWorkerSet {NS}/test-ds-0-old00000-prefill" in got
    # The target revision is listed before the draining one.
    assert got.index(f"revision {target}") < got.index("revision old00000")


def test_external_role_without_scaler_says_so() -> None:
    ds = (
        DisaggregatedSetBuilder(NS)
        .uid(DS_UID)
        .role("prefill", 1)
        .role("decode", None)
        .external("decode")
        .obj()
    )
    ds["metadata"]["name"] = "test-ds"
    got = text(ds_status.render(ds_status.DSSnapshot(ds, [], [])))
    assert "role decode  ready 0  target unresolved (no scaler)" in got
    assert "no LeaderWorkerSet yet" in got


def test_the_scaling_policy_is_shown_while_a_rollout_runs_and_always_in_json() -> None:
    ds = DisaggregatedSetBuilder(NS).uid(DS_UID).role("prefill", 1).obj()
    ds["metadata"]["name"] = "test-ds"
    ds["spec"]["scalingPolicy"] = {"duringRollout": um.SCALING_ADVANCE_ROLLOUT}
    target = disaggregated_revision(ds["spec"]["roles"])
    settled = ds_status.DSSnapshot(ds, [], [Snapshot(child("prefill", revision=target), [], [])])
    assert "scaling during rollout" not in text(ds_status.render(settled))
    assert ds_status.document(settled)["scalingDuringRollout"] == um.SCALING_ADVANCE_ROLLOUT
    rolling = ds_status.DSSnapshot(
        ds, [], [Snapshot(lws, [], []) for lws in (child("prefill", revision=target), child("prefill"))]
    )
    assert "scaling during rollout: AdvanceRollout" in text(ds_status.render(rolling)).splitlines()[0]
