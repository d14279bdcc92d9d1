"""Group keys and pod-name ordinals."""

import pytest

from leaderworkerset.core.groups import keys


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
