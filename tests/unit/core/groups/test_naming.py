"""Object names of an Ordinal LeaderWorkerSet and observed-group helpers."""

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.naming import (
    MAX_STATEFULSET_NAME,
    group_index_from_leader_name,
    leader_name_for_worker,
    leader_pod_name,
    leader_statefulset_name,
    shared_service_name,
    worker_pod_name,
    worker_statefulset_name,
    worker_statefulset_name_fits,
)
from leaderworkerset.core.groups.state import (
    RETAINED_GROUP_REASON,
    GroupState,
    container_restarted,
    describe_groups,
    group_states,
    slot_by_group_index,
    statefulset_ready,
)
from leaderworkerset.core.objects import controller_owner
from tests.support.builders import leader_pod, worker_statefulset


def test_ordinal_names() -> None:
    assert leader_statefulset_name("lws") == "lws"
    assert shared_service_name("lws") == "lws"
    assert leader_pod_name("lws", 3) == "lws-3"
    assert worker_statefulset_name("lws-3") == "lws-3"
    assert worker_pod_name("lws-3", 1) == "lws-3-1"


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        pytest.param(
            {"name": "lws-0-2", "annotations": {c.ANNOTATION_LEADER_NAME: "lws-0"}}, "lws-0", id="annotation"
        ),
        pytest.param({"name": "my-set-12-3"}, "my-set-12", id="pod name minus ordinal"),
        pytest.param({"name": "lws-0-x"}, None, id="no ordinal"),
        pytest.param({"name": "lws-0-99999999999"}, None, id="ordinal beyond int32"),
    ],
)
def test_leader_name_for_worker(meta: dict[str, Any], want: str | None) -> None:
    assert leader_name_for_worker({"metadata": meta}) == want


@pytest.mark.parametrize(
    ("pod_name", "want"),
    [
        pytest.param("lws-4", 4, id="leader"),
        pytest.param("lws-4-1", None, id="worker of another parent"),
        pytest.param("other-4", None, id="another set"),
    ],
)
def test_group_index_from_leader_name(pod_name: str, want: int | None) -> None:
    assert group_index_from_leader_name("lws", pod_name) == want


def test_worker_statefulset_name_limit() -> None:
    assert MAX_STATEFULSET_NAME == 52
    assert worker_statefulset_name_fits("a" * 52)
    assert not worker_statefulset_name_fits("a" * 53)


@pytest.mark.parametrize(
    ("status", "replicas", "want"),
    [
        pytest.param(
            {"availableReplicas": 2, "currentRevision": "a", "updateRevision": "a"}, 2, True, id="ready"
        ),
        pytest.param(
            {"availableReplicas": 1, "currentRevision": "a", "updateRevision": "a"}, 2, False, id="short"
        ),
        pytest.param(
            {"availableReplicas": 2, "currentRevision": "a", "updateRevision": "b"}, 2, False, id="rolling"
        ),
        pytest.param({}, 0, True, id="zero replicas with empty status"),
    ],
)
def test_statefulset_ready(status: dict[str, Any], replicas: int, want: bool) -> None:
    assert statefulset_ready({"spec": {"replicas": replicas}, "status": status}) is want


def test_controller_owner_picks_the_controller() -> None:
    obj = {"metadata": {"ownerReferences": [{"name": "a"}, {"name": "b", "controller": True}]}}
    assert controller_owner(obj) == {"name": "b", "controller": True}
    assert controller_owner({"metadata": {}}) is None


def test_container_restarted_needs_running_or_pending() -> None:
    pod = leader_pod("lws", 0, "r", restart_count=1)
    assert container_restarted(pod)
    pod["status"]["phase"] = "Failed"
    assert not container_restarted(pod)


def test_slot_by_group_index_skips_bad_indexes() -> None:
    pods = [
        leader_pod("lws", 0, "r"),
        leader_pod("lws", 1, "r", group_index="x"),
        leader_pod("lws", 2, "r", group_index="-1"),
        leader_pod("lws", 9, "r"),
    ]
    slots = slot_by_group_index(pods, 3)
    assert [None if s is None else s["metadata"]["name"] for s in slots] == ["lws-0", None, None]


def test_group_states_size_two() -> None:
    pods = [
        leader_pod("lws", 0, "new"),
        leader_pod("lws", 1, "old"),
        leader_pod("lws", 2, "new", ready=False),
    ]
    stss = [worker_statefulset(pods[0]), worker_statefulset(pods[1])]
    states = group_states(
        lws_name="lws", sts_replicas=4, size=2, revision_key="new", leader_pods=pods, statefulsets=stss
    )
    assert states == [
        GroupState(True, True),
        GroupState(True, False),
        GroupState(False, False),  # no worker statefulset yet: missing
        GroupState(False, False),  # no leader yet: missing
    ]


def _worker(
    leader: dict[str, Any], *, available: int, wanted: int = 2, rolling: bool = False
) -> dict[str, Any]:
    sts = worker_statefulset(leader, replicas=wanted)
    sts["status"] = {
        "availableReplicas": available,
        "currentRevision": "a",
        "updateRevision": "b" if rolling else "a",
    }
    return sts


@pytest.mark.parametrize(
    ("pod_kwargs", "worker", "want_ready", "want_reasons"),
    [
        pytest.param({}, {"available": 2}, True, (), id="ready group"),
        pytest.param({"ready": False}, {"available": 2}, False, ("leader pod Pending",), id="leader pending"),
        pytest.param(
            {"ready": False, "phase": "Running"},
            {"available": 2},
            False,
            ("leader pod not ready",),
            id="not ready",
        ),
        pytest.param({}, None, False, ("worker statefulset missing",), id="no workers yet"),
        pytest.param({}, {"available": 1}, False, ("workers available 1/2",), id="worker down"),
        pytest.param(
            {"deleting": True},
            {"available": 2, "rolling": True},
            False,
            ("leader pod terminating", "worker statefulset rolling its pods"),
            id="terminating and rolling",
        ),
        pytest.param(
            {"deleting": True, "annotations": {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}},
            {"available": 0},
            False,
            (RETAINED_GROUP_REASON, "leader pod terminating", "workers available 0/2"),
            id="retained after exhausting its restart budget: says how to recover",
        ),
        pytest.param(
            {"deleting": True, "annotations": {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"}},
            {"available": 2},
            False,
            (RETAINED_GROUP_REASON, "leader pod terminating"),
            id="retained while its pods still report Ready: stopped, not ready",
        ),
    ],
)
def test_describe_groups(
    pod_kwargs: dict[str, Any], worker: dict[str, Any] | None, want_ready: bool, want_reasons: tuple[str, ...]
) -> None:
    pod = leader_pod("lws", 1, "new", **pod_kwargs)
    stss = {} if worker is None else {"lws-1": _worker(pod, **worker)}
    (view,) = describe_groups(size=3, revision_key="new", leader_pods=[pod], worker_statefulsets=stss)
    assert (view.index, view.leader, view.revision) == (1, "lws-1", "new")
    assert view.ready is want_ready
    assert view.reasons == want_reasons


def test_describe_groups_sorted_and_size_one() -> None:
    pods = [
        leader_pod("lws", 2, "old"),
        leader_pod("lws", 0, "new"),
        leader_pod("lws", 1, "new", group_index="x"),
    ]
    views = describe_groups(size=1, revision_key="new", leader_pods=pods, worker_statefulsets={})
    assert [(v.index, v.updated, v.reasons) for v in views] == [(0, True, ()), (2, False, ())]


def test_describe_groups_names_hash_groups_by_key_and_hostname() -> None:
    key = "ab" * 20
    hash_leader = leader_pod("lws", 0, "new", name="lws-5d8f9c7b6-x2x4z", group_index=key)
    hash_leader["metadata"]["annotations"] = {c.ANNOTATION_GROUP_IDENTITY: c.GROUP_IDENTITY_HASH}
    hash_leader["spec"]["hostname"] = f"lws-{key[:8]}"
    stray = leader_pod("lws", 0, "new", name="stray", group_index="not-a-number")
    views = describe_groups(
        size=1, revision_key="new", leader_pods=[hash_leader, stray], worker_statefulsets={}
    )
    assert [(v.index, v.name, v.key, v.hostname, v.leader) for v in views] == [
        (-1, key[:8], key, f"lws-{key[:8]}", "lws-5d8f9c7b6-x2x4z")
    ]
