"""Subgroup index arithmetic.

A group of `size` pods (leader + workers 1..size-1) is split into subgroups of `subgroup_size` pods.
When `size - 1` is a multiple of the subgroup size but `size` is not, the leader is the "extra" pod
and joins subgroup 0, so the worker indexes are shifted by one before dividing.

"""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.strconv import go_div, go_mod

LEADER_SUBGROUP_INDEX = 0


def leader_is_extra_pod(size: int, subgroup_size: int) -> bool:
    """True when the leader does not count towards the even split of the workers."""
    return go_mod(size - 1, subgroup_size) == 0 and go_mod(size, subgroup_size) != 0


def worker_subgroup_index(size: int, subgroup_size: int, worker_index: int) -> int:
    """Subgroup of worker `worker_index`; the policy type does not change the worker formula.

    Division truncates toward zero, as Go's does (it only matters for odd inputs such as worker
    index 0 on the extra-pod branch). `subgroup_size` must not be 0.
    """
    if leader_is_extra_pod(size, subgroup_size):
        return go_div(worker_index - 1, subgroup_size)
    return go_div(worker_index, subgroup_size)


def leader_subgroup_index(policy_type: str | None) -> int | None:
    """Subgroup of the leader: 0, or none at all with LeaderExcluded."""
    if policy_type == c.SUBGROUP_POLICY_LEADER_EXCLUDED:
        return None
    return LEADER_SUBGROUP_INDEX
