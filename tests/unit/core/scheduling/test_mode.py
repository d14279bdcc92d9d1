"""Which gang-scheduling mode a LeaderWorkerSet's `spec.scheduling` asks for (KEP-666)."""

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.scheduling import mode


@pytest.mark.parametrize(
    ("scheduling", "want"),
    [
        pytest.param({}, c.SCHEDULING_MODE_REPLICA, id="empty means replica"),
        pytest.param({"replica": {}}, c.SCHEDULING_MODE_REPLICA, id="empty replica node"),
        pytest.param({"disruptionMode": {"all": {}}}, c.SCHEDULING_MODE_LWS, id="whole set"),
        pytest.param({"replica": {"worker": {}}}, c.SCHEDULING_MODE_ROLE, id="role leaf"),
        pytest.param(
            {"replica": {"schedulingPolicy": {"gang": {}}}}, c.SCHEDULING_MODE_REPLICA, id="replica policy"
        ),
    ],
)
def test_scheduling_mode(scheduling: dict[str, object], want: str) -> None:
    assert mode.scheduling_mode(scheduling) == want


def test_two_active_scheduling_levels_are_an_error() -> None:
    with pytest.raises(mode.SchedulingModeError, match=r"got \[lws role\]"):
        mode.scheduling_mode({"schedulingPolicy": {"basic": {}}, "replica": {"leader": {}}})
