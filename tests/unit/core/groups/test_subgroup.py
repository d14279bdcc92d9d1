"""Subgroup index arithmetic."""

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups import subgroup


@pytest.mark.parametrize(
    ("size", "subgroup_size", "worker_index", "want"),
    [
        pytest.param(4, 2, 2, 1, id="even number of pods"),
        pytest.param(5, 2, 2, 0, id="odd number of pods, first subgroup has an extra pod"),
        pytest.param(3, 1, 1, 1, id="subgroup size 1, worker 1"),
        pytest.param(3, 1, 2, 2, id="subgroup size 1, worker 2"),
        pytest.param(9, 4, 4, 0, id="n=9 k=4: leader is extra, worker 4 in subgroup 0"),
        pytest.param(9, 4, 5, 1, id="n=9 k=4: worker 5 in subgroup 1"),
        pytest.param(8, 4, 3, 0, id="n=8 k=4: worker 3 in subgroup 0"),
        pytest.param(8, 4, 4, 1, id="n=8 k=4: worker 4 in subgroup 1"),
        pytest.param(11, 5, 7, 1, id="n=11 k=5: worker 7 in subgroup 1"),
    ],
)
def test_worker_subgroup_index(size: int, subgroup_size: int, worker_index: int, want: int) -> None:
    assert subgroup.worker_subgroup_index(size, subgroup_size, worker_index) == want


@pytest.mark.parametrize(
    ("policy_type", "want"),
    [
        pytest.param(None, 0, id="no type means LeaderWorker"),
        pytest.param(c.SUBGROUP_POLICY_LEADER_WORKER, 0, id="LeaderWorker"),
        pytest.param(c.SUBGROUP_POLICY_LEADER_EXCLUDED, None, id="LeaderExcluded has no subgroup"),
    ],
)
def test_leader_subgroup_index(policy_type: str | None, want: int | None) -> None:
    assert subgroup.leader_subgroup_index(policy_type) == want
