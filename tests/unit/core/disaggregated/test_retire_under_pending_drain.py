"""Upstream v1.0's drain coordinator retires a whole old revision under a pending drain, even when
that takes a role below its Ready floor — found by the e2e capacity guard, pinned here.

The coordinator retires the revision when every role's committed Ready fits its safe drain.
A child still counting a terminating group (status.replicas > spec) commits none of its Ready
groups, so its surviving Ready group counts as free to go. Observed on the cluster: prefill 3,
decode 2, encode 1 mid-rollout, old prefill at spec 1 / status 2 / ready 1 and new prefill 2 of
3 Ready: the whole old revision is scaled to 0, prefill Ready drops to 2. Without the pending
drain the same state is blocked. If the planner is changed to hold the floor here, this table
changes with it (and the e2e guard's `known_dips` exception goes).
"""

import pytest

from leaderworkerset.core.disaggregated.rollout import ChildView, RoleTarget, decide_rollout

ROLES = [RoleTarget("prefill", 3), RoleTarget("decode", 2), RoleTarget("encode", 1)]
OLD, NEW = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def children(old_prefill_status: int) -> list[ChildView]:
    return [
        ChildView("old-prefill", "prefill", "old", 1, old_prefill_status, 1, 3, OLD),
        ChildView("old-decode", "decode", "old", 1, 1, 1, 2, OLD),
        ChildView("old-encode", "encode", "old", 1, 1, 1, 1, OLD),
        ChildView("new-prefill", "prefill", "new", 3, 3, 2, 3, NEW),
        ChildView("new-decode", "decode", "new", 2, 2, 2, 2, NEW),
        ChildView("new-encode", "encode", "new", 1, 1, 1, 1, NEW),
    ]


@pytest.mark.parametrize(
    ("old_prefill_status", "want_kind", "want_down"),
    [
        pytest.param(
            2,
            "scale",
            [("old-prefill", 0), ("old-decode", 0), ("old-encode", 0)],
            id="pending drain: the whole old revision is retired (prefill Ready 3 -> 2)",
        ),
        pytest.param(1, "blocked", [], id="no pending drain: blocked, the floor holds"),
    ],
)
def test_retire_under_pending_drain(
    old_prefill_status: int, want_kind: str, want_down: list[tuple[str, int]]
) -> None:
    decision = decide_rollout("new", ROLES, children(old_prefill_status))
    assert decision.kind == want_kind
    assert [(change.lws, change.replicas) for change in decision.scale_down] == want_down
    assert decision.scale_up == ()
