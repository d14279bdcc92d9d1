"""Volcano PodGroups, PodGroup ownership checks, the scheduling condition."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.scheduling import gang
from tests.support.builders import LWS_UID, cached_lws, leader_pod

WORKERS_100M = {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "100m"}}}]}}
LWS_REF = {
    "apiVersion": c.LWS_API_VERSION,
    "kind": c.LWS_KIND,
    "name": "test-sample",
    "uid": LWS_UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def _lws(**annotations: str) -> dict[str, Any]:
    builder = cached_lws().size(3).worker_template(WORKERS_100M)
    if annotations:
        builder.annotations(annotations)
    return builder.obj()


def _leader(group: int = 0, revision: str = "abc123") -> dict[str, Any]:
    pod = leader_pod("test-sample", group, revision)
    pod["metadata"]["uid"] = f"leader-{group}"
    return pod


def test_legacy_pod_group_matches_upstream() -> None:
    """Upstream's 'create podgroup for LeaderCreated policy' row, plus queue and annotations."""
    lws = _lws(
        **{c.ANNOTATION_VOLCANO_QUEUE_NAME: "research", "volcano.sh/sla-waiting-time": "5m", "x/y": "z"}
    )
    got = gang.volcano_leader_pod_group(lws, _leader())
    assert got == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "test-sample-0-abc123",
            "namespace": "default",
            "labels": {
                c.LABEL_SET_NAME: "test-sample",
                c.LABEL_GROUP_INDEX: "0",
                c.LABEL_TEMPLATE_REVISION_HASH: "abc123",
            },
            "annotations": {"volcano.sh/sla-waiting-time": "5m"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "test-sample-0",
                    "uid": "leader-0",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"minMember": 3, "minResources": {"cpu": "300m"}, "queue": "research"},
    }


@pytest.mark.parametrize(
    ("startup", "want"),
    [
        pytest.param(c.STARTUP_POLICY_LEADER_CREATED, 3, id="LeaderCreated: the whole group"),
        pytest.param(c.STARTUP_POLICY_LEADER_READY, 1, id="LeaderReady: the leader may start alone"),
    ],
)
def test_legacy_min_member(startup: str, want: int) -> None:
    lws = cached_lws().size(3).worker_template(WORKERS_100M).startup_policy(startup).obj()
    got = gang.volcano_leader_pod_group(lws, _leader())
    assert got["spec"]["minMember"] == want
    assert got["spec"]["minResources"] == {"cpu": "300m"}  # still the whole group


def test_typed_pod_groups_one_per_replica_owned_by_the_lws() -> None:
    lws = cached_lws().replicas(2).size(3).worker_template(WORKERS_100M).scheduling({}).obj()
    got = gang.volcano_replica_pod_groups(lws, 2, "rev1")
    assert [g["metadata"]["name"] for g in got] == ["test-sample-0-rev1", "test-sample-1-rev1"]
    assert all(g["metadata"]["ownerReferences"] == [LWS_REF] for g in got)
    assert [g["spec"]["minMember"] for g in got] == [3, 3]


def test_typed_pod_groups_need_spec_scheduling() -> None:
    assert gang.volcano_replica_pod_groups(_lws(), 2, "rev1") == []


def test_typed_hash_groups_are_not_enumerated_but_still_checked() -> None:
    """Hash groups have keys, not indexes: the pod controller makes each one's PodGroup."""
    hash_lws = cached_lws().replicas(2).group_identity(c.GROUP_IDENTITY_HASH)
    assert gang.volcano_replica_pod_groups(hash_lws.scheduling({}).obj(), 2, "rev1") == []
    with pytest.raises(gang.SchedulingError) as raised:
        gang.volcano_replica_pod_groups(hash_lws.scheduling({"schedulingConstraints": {}}).obj(), 2, "rev1")
    assert raised.value.reason == c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY


@dataclass(frozen=True)
class LeaderGroupCase:
    scheduling: dict[str, Any] | None
    identity: str
    want_pod_controller_makes_it: bool


LEADER_GROUP_CASES = [
    pytest.param(LeaderGroupCase(None, c.GROUP_IDENTITY_ORDINAL, True), id="H1 ordinal"),
    pytest.param(LeaderGroupCase(None, c.GROUP_IDENTITY_HASH, True), id="H1 hash"),
    pytest.param(LeaderGroupCase({}, c.GROUP_IDENTITY_ORDINAL, False), id="H2 ordinal: the LWS controller's"),
    pytest.param(LeaderGroupCase({}, c.GROUP_IDENTITY_HASH, True), id="H2 hash: per group key"),
]


@pytest.mark.parametrize("case", LEADER_GROUP_CASES)
def test_who_makes_the_leaders_pod_group(case: LeaderGroupCase) -> None:
    builder = cached_lws().group_identity(case.identity)
    if case.scheduling is not None:
        builder.scheduling(case.scheduling)
    assert gang.volcano_leader_pod_group_wanted(builder.obj()) is case.want_pod_controller_makes_it


def test_leader_group_cases_ran() -> None:
    assert len(LEADER_GROUP_CASES) == 4


def test_hash_leader_pod_group_is_named_by_the_group_key() -> None:
    """The name the webhook stamps (`<lws>-<groupKey>-<revision>`), owned by the leader pod."""
    key = "a" * 40
    lws = cached_lws().size(3).worker_template(WORKERS_100M).group_identity(c.GROUP_IDENTITY_HASH)
    leader = _leader()
    leader["metadata"]["labels"][c.LABEL_GROUP_INDEX] = key
    got = gang.volcano_leader_pod_group(lws.scheduling({}).obj(), leader)
    assert got["metadata"]["name"] == f"test-sample-{key}-abc123"
    assert got["metadata"]["labels"][c.LABEL_GROUP_INDEX] == key
    assert [(r["kind"], r["uid"]) for r in got["metadata"]["ownerReferences"]] == [("Pod", "leader-0")]
    assert got["spec"]["minMember"] == 3
    gang.inject_volcano_group_name(leader)
    assert leader["metadata"]["annotations"][c.ANNOTATION_SCHEDULING_GROUP_NAME] == got["metadata"]["name"]


@pytest.mark.parametrize(
    ("scheduling", "want_reason"),
    [
        pytest.param({"schedulingConstraints": {}}, c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, id="lws level"),
        pytest.param(
            {"replica": {"schedulingPolicy": {"basic": {}}}},
            c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY,
            id="basic policy",
        ),
        pytest.param(
            {"replica": {"disruptionMode": {"all": {}}}},
            c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY,
            id="disruption mode",
        ),
        pytest.param(
            {"schedulingConstraints": {}, "replica": {}},
            c.REASON_INVALID_SCHEDULING_CONFIGURATION,
            id="ambiguous level",
        ),
    ],
)
def test_typed_pod_groups_reject_what_volcano_cannot_honour(
    scheduling: dict[str, Any], want_reason: str
) -> None:
    lws = cached_lws().scheduling(scheduling).obj()
    with pytest.raises(gang.SchedulingError) as raised:
        gang.volcano_replica_pod_groups(lws, 1, "rev1")
    assert raised.value.reason == want_reason


@dataclass(frozen=True)
class OwnerCase:
    owner: dict[str, Any] | None
    deleting: bool = False
    want: gang.Ownership = gang.Ownership.OURS


OWNER_CASES = [
    pytest.param(OwnerCase(LWS_REF), id="current LWS"),
    pytest.param(
        OwnerCase({**LWS_REF, "uid": "previous"}, want=gang.Ownership.PREVIOUS), id="previous same-name LWS"
    ),
    pytest.param(OwnerCase({**LWS_REF, "name": "other"}, want=gang.Ownership.UNEXPECTED), id="other LWS"),
    pytest.param(OwnerCase(None, want=gang.Ownership.UNEXPECTED), id="no controller"),
    pytest.param(OwnerCase(LWS_REF, deleting=True, want=gang.Ownership.TERMINATING), id="terminating"),
]


@pytest.mark.parametrize("case", OWNER_CASES)
def test_ownership(case: OwnerCase) -> None:
    meta: dict[str, Any] = {
        "name": "pg",
        "namespace": "default",
        "ownerReferences": [case.owner] if case.owner else [],
    }
    if case.deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    existing = {"metadata": meta}
    assert gang.ownership(existing, LWS_REF) is case.want
    if case.want is gang.Ownership.OURS:
        gang.check_existing_pod_group(existing, LWS_REF)
        return
    with pytest.raises(gang.SchedulingError) as raised:
        gang.check_existing_pod_group(existing, LWS_REF)
    assert raised.value.reason == c.REASON_POD_GROUP_CREATE_FAILED
    assert raised.value.unexpected_owner is (case.want is gang.Ownership.UNEXPECTED)


def test_owner_table_size() -> None:
    assert len(OWNER_CASES) == 5


def test_inject_volcano_group_name_from_labels() -> None:
    pod = {
        "metadata": {
            "labels": {
                c.LABEL_SET_NAME: "test-lws",
                c.LABEL_GROUP_INDEX: "1",
                c.LABEL_TEMPLATE_REVISION_HASH: "rev1",
            }
        }
    }
    gang.inject_volcano_group_name(pod)
    assert pod["metadata"]["annotations"] == {c.ANNOTATION_SCHEDULING_GROUP_NAME: "test-lws-1-rev1"}


def test_scheduling_condition_written_once_and_flipped() -> None:
    lws = cached_lws().generation(7).obj()
    first = gang.scheduling_conditions(
        lws, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED, "ok", "t1"
    )
    assert first == [
        {
            "type": c.CONDITION_WORKLOAD_SCHEDULING_CREATED,
            "status": c.CONDITION_TRUE,
            "reason": c.REASON_SCHEDULING_PREREQUISITES_CREATED,
            "message": "ok",
            "observedGeneration": 7,
            "lastTransitionTime": "t1",
        }
    ]
    lws["status"] = {"conditions": first}
    assert (
        gang.scheduling_conditions(
            lws, c.CONDITION_TRUE, c.REASON_SCHEDULING_PREREQUISITES_CREATED, "ok", "t2"
        )
        is None
    )
    flipped = gang.scheduling_conditions(
        lws, c.CONDITION_FALSE, c.REASON_POD_GROUP_CREATE_FAILED, "boom", "t3"
    )
    assert flipped is not None
    assert (flipped[0]["status"], flipped[0]["reason"], flipped[0]["lastTransitionTime"]) == (
        c.CONDITION_FALSE,
        c.REASON_POD_GROUP_CREATE_FAILED,
        "t3",
    )
