"""Group keys, pod-name ordinals and subgroup index arithmetic (spec §2.1, §3.E)."""

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core import keys, subgroup, validation


@pytest.mark.parametrize(
    ("namespace", "pod_name", "want"),
    [
        pytest.param(
            "default", "test-sample", "95e88034e460983f51a9952fe128729fbc0663b5", id="same namespace"
        ),
        pytest.param(
            "default", "podName", "390b34ab671d29e9997d7d4252b8bbf8da02f5b7", id="different pod name"
        ),
        pytest.param(
            "leaderworkerset",
            "test-sample",
            "39f5d7e9122b9d94d3932e3720b43fd3b56347e8",
            id="different namespace",
        ),
    ],
)
def test_group_key_matches_upstream_golden_values(namespace: str, pod_name: str, want: str) -> None:
    assert keys.group_key(namespace, pod_name) == want


def test_subgroup_key_has_no_namespace_prefix() -> None:
    assert keys.subgroup_key("test-sample-1", 0) == keys.sha1_hex("test-sample-1/0")
    assert keys.subgroup_key("test-sample-1", "2") == keys.subgroup_key("test-sample-1", 2)


def test_hash_leader_hostname_uses_eight_key_characters() -> None:
    assert keys.hash_leader_hostname("lws", "0123456789abcdef") == "lws-01234567"


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("test-sample-1", ("test-sample", 1), id="leader of group 1"),
        pytest.param("test-sample-1-3", ("test-sample-1", 3), id="worker keeps the leader as parent"),
        pytest.param("test-007", ("test", 7), id="leading zeros"),
        pytest.param("test", ("", -1), id="no ordinal"),
        pytest.param("test-", ("", -1), id="dash without digits"),
        pytest.param("test-2147483648", ("test", -1), id="ordinal beyond int32"),
        pytest.param("-5", ("", 5), id="empty parent"),
    ],
)
def test_parent_name_and_ordinal(name: str, want: tuple[str, int]) -> None:
    assert keys.parent_name_and_ordinal(name) == want


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


@pytest.mark.parametrize(
    ("numerator", "denominator", "quotient", "remainder"),
    [
        pytest.param(7, 2, 3, 1, id="positive"),
        pytest.param(-1, 4, 0, -1, id="negative numerator truncates toward zero"),
        pytest.param(-7, 2, -3, -1, id="negative quotient"),
    ],
)
def test_go_integer_division(numerator: int, denominator: int, quotient: int, remainder: int) -> None:
    assert subgroup.go_div(numerator, denominator) == quotient
    assert subgroup.go_mod(numerator, denominator) == remainder


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("12", 12, id="digits"),
        pytest.param("+3", 3, id="plus sign"),
        pytest.param("-3", -3, id="minus sign"),
    ],
)
def test_go_atoi_accepts(text: str, want: int) -> None:
    assert keys.go_atoi(text) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", 'strconv.Atoi: parsing "": invalid syntax', id="empty"),
        pytest.param("1.5", 'strconv.Atoi: parsing "1.5": invalid syntax', id="decimal"),
        pytest.param(" 1", 'strconv.Atoi: parsing " 1": invalid syntax', id="space"),
        pytest.param("9" * 20, f'strconv.Atoi: parsing "{"9" * 20}": value out of range', id="overflow"),
    ],
)
def test_go_atoi_rejects_with_go_message(text: str, message: str) -> None:
    with pytest.raises(keys.GoParseError) as raised:
        keys.go_atoi(text)
    assert str(raised.value) == message


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
    assert validation.scheduling_mode(scheduling) == want


def test_two_active_scheduling_levels_are_an_error() -> None:
    with pytest.raises(validation.SchedulingModeError, match=r"got \[lws role\]"):
        validation.scheduling_mode({"schedulingPolicy": {"basic": {}}, "replica": {"leader": {}}})
