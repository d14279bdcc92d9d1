"""Desired leader and worker StatefulSets (upstream's apply-config cases)."""

from dataclasses import dataclass
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.statefulsets import (
    WorkerStatefulSetError,
    leader_statefulset,
    merge_metadata,
    require_leader_dns,
    worker_statefulset,
)
from tests.support.builders import (
    LWS_UID,
    LeaderWorkerSetBuilder,
    cached_lws,
    leader_pod,
    leader_pod_spec,
    worker_pod_spec,
)

REV = "5c6b7f8d9"
LWS_OWNER = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "name": "test-sample",
    "uid": LWS_UID,
    "controller": True,
    "blockOwnerDeletion": True,
}
PVC = {
    "metadata": {"name": "pvc1", "labels": {"dropped": "yes"}},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "standard",
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}},
        "selector": {"matchLabels": {"dropped": "yes"}},
    },
}
WANT_PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "pvc1", "namespace": "default"},
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "standard",
        "volumeMode": "Filesystem",
        "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}},
    },
}


def want_leader(
    *,
    replicas: int,
    size: int,
    max_unavailable: int = 1,
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
    pod_spec: dict[str, Any] | None = None,
    partition: int = 0,
    **spec_extra: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "test-sample",
            "namespace": "default",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "test-sample",
                c.LABEL_TEMPLATE_REVISION_HASH: REV,
            },
            "annotations": {**(annotations or {}), "leaderworkerset.sigs.k8s.io/replicas": str(replicas)},
            "ownerReferences": [LWS_OWNER],
        },
        "spec": {
            "replicas": replicas,
            "selector": {
                "matchLabels": {"leaderworkerset.sigs.k8s.io/name": "test-sample", c.LABEL_WORKER_INDEX: "0"}
            },
            "template": {
                "metadata": {
                    "labels": {
                        "leaderworkerset.sigs.k8s.io/name": "test-sample",
                        "leaderworkerset.sigs.k8s.io/worker-index": "0",
                        c.LABEL_TEMPLATE_REVISION_HASH: REV,
                    },
                    "annotations": {
                        "leaderworkerset.sigs.k8s.io/size": str(size),
                        **(template_annotations or {}),
                    },
                },
                "spec": pod_spec or worker_pod_spec(),
            },
            "serviceName": "test-sample",
            "podManagementPolicy": "Parallel",
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"partition": partition, "maxUnavailable": max_unavailable},
            },
            **spec_extra,
        },
    }


@dataclass(frozen=True)
class LeaderCase:
    lws: LeaderWorkerSetBuilder
    want: dict[str, Any]
    sts_replicas: int | None = None


EXCLUSIVE = {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "topologyKey"}

LEADER_CASES = [
    pytest.param(
        LeaderCase(cached_lws().replicas(1).size(1), want_leader(replicas=1, size=1)),
        id="1 replica, size 1, no leader template",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(1).size(2).annotations(EXCLUSIVE),
            want_leader(replicas=1, size=2, annotations=EXCLUSIVE, template_annotations=EXCLUSIVE),
        ),
        id="1 replica, size 2, exclusive placement",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(2).size(2).annotations(EXCLUSIVE).leader_template(),
            want_leader(
                replicas=2,
                size=2,
                annotations=EXCLUSIVE,
                template_annotations=EXCLUSIVE,
                pod_spec=leader_pod_spec(),
            ),
        ),
        id="2 replicas, size 2, leader template, exclusive placement",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(1).max_unavailable(2).max_surge(1),
            want_leader(replicas=1, size=1, max_unavailable=3),
        ),
        id="maxUnavailable 2 and maxSurge 1 give the statefulset 3",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(1).max_unavailable(0).max_surge(2),
            want_leader(replicas=1, size=1, max_unavailable=1),
        ),
        id="maxSurge capped at replicas before adding",
    ),
    pytest.param(
        LeaderCase(
            cached_lws()
            .replicas(1)
            .size(2)
            .leader_template()
            .subgroup(2, c.SUBGROUP_POLICY_LEADER_WORKER)
            .annotations({c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "topologyKey"}),
            want_leader(
                replicas=1,
                size=2,
                annotations={c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "topologyKey"},
                template_annotations={
                    c.ANNOTATION_SUBGROUP_SIZE: "2",
                    c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "topologyKey",
                    c.ANNOTATION_SUBGROUP_POLICY_TYPE: "LeaderWorker",
                },
                pod_spec=leader_pod_spec(),
            ),
        ),
        id="subgroup policy annotations",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(1).volume_claims([PVC], {"whenDeleted": "Retain", "whenScaled": "Delete"}),
            want_leader(
                replicas=1,
                size=1,
                volumeClaimTemplates=[WANT_PVC],
                persistentVolumeClaimRetentionPolicy={"whenDeleted": "Retain", "whenScaled": "Delete"},
            ),
        ),
        id="volume claim templates keep only the carried fields",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(0).max_unavailable(0).max_surge(0),
            want_leader(replicas=0, size=1, max_unavailable=1),
        ),
        id="0 replicas: statefulset maxUnavailable forced to 1",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(2).max_unavailable(1).max_surge("50%"),
            want_leader(replicas=3, size=1, max_unavailable=2),
            sts_replicas=3,
        ),
        id="maxSurge percent uses LWS replicas, not statefulset replicas",
    ),
    pytest.param(
        LeaderCase(
            cached_lws().replicas(1).subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA),
            want_leader(
                replicas=1, size=1, template_annotations={c.ANNOTATION_SUBDOMAIN_POLICY: "UniquePerReplica"}
            ),
        ),
        id="UniquePerReplica marks the leader template, service name stays the set's",
    ),
]


@pytest.mark.parametrize("case", LEADER_CASES)
def test_leader_statefulset(case: LeaderCase) -> None:
    lws = case.lws.obj()
    replicas = lws["spec"]["replicas"] if case.sts_replicas is None else case.sts_replicas
    got = leader_statefulset(lws, partition=0, replicas=replicas, revision_key=REV)
    want = case.want
    if case.sts_replicas is not None:
        # The replicas annotation records spec.replicas, while spec.replicas carries the surge.
        want["metadata"]["annotations"][c.ANNOTATION_REPLICAS] = str(lws["spec"]["replicas"])
    assert got == want


def test_leader_statefulset_propagates_object_meta_controller_wins() -> None:
    lws = (
        cached_lws()
        .replicas(2)
        .labels({"app": "inference", c.LABEL_SET_NAME: "user-value"})
        .annotations({"owner": "platform", c.ANNOTATION_REPLICAS: "user-value"})
        .obj()
    )
    got = leader_statefulset(lws, partition=0, replicas=2, revision_key="revision-1")
    assert got["metadata"]["labels"] == {
        "app": "inference",
        c.LABEL_SET_NAME: "test-sample",
        c.LABEL_TEMPLATE_REVISION_HASH: "revision-1",
    }
    assert got["metadata"]["annotations"] == {"owner": "platform", c.ANNOTATION_REPLICAS: "2"}


def test_leader_template_keeps_user_template_metadata() -> None:
    template = {
        "metadata": {"labels": {"team": "a", c.LABEL_WORKER_INDEX: "7"}, "annotations": {"note": "x"}},
        "spec": worker_pod_spec(),
    }
    lws = cached_lws().worker_template(template).obj()
    got = leader_statefulset(lws, partition=1, replicas=1, revision_key=REV)
    meta = got["spec"]["template"]["metadata"]
    assert meta["labels"] == {
        "team": "a",
        c.LABEL_WORKER_INDEX: "0",
        c.LABEL_SET_NAME: "test-sample",
        c.LABEL_TEMPLATE_REVISION_HASH: REV,
    }
    assert meta["annotations"] == {"note": "x", c.ANNOTATION_SIZE: "1"}
    assert got["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 1
    # The input is never mutated.
    assert lws["spec"]["leaderWorkerTemplate"]["workerTemplate"] == template


def test_leader_statefulset_extra_template_annotations() -> None:
    got = leader_statefulset(
        cached_lws().obj(), partition=0, replicas=1, revision_key=REV, extra_template_annotations={"k": "v"}
    )
    assert got["spec"]["template"]["metadata"]["annotations"] == {c.ANNOTATION_SIZE: "1", "k": "v"}


def test_empty_exclusive_topology_annotation_is_not_copied_to_template() -> None:
    lws = cached_lws().annotations({c.ANNOTATION_EXCLUSIVE_TOPOLOGY: ""}).obj()
    got = leader_statefulset(lws, partition=0, replicas=1, revision_key=REV)
    assert c.ANNOTATION_EXCLUSIVE_TOPOLOGY not in got["spec"]["template"]["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("user", "controller", "want"),
    [
        pytest.param(None, {"a": "1"}, {"a": "1"}, id="no user metadata"),
        pytest.param({"a": "0", "b": "2"}, {"a": "1"}, {"a": "1", "b": "2"}, id="controller wins"),
    ],
)
def test_merge_metadata(
    user: dict[str, str] | None, controller: dict[str, str], want: dict[str, str]
) -> None:
    assert merge_metadata(user, controller) == want


# --- worker statefulsets -----------------------------------------------------------------------------


def leader_for(revision: str = REV, **kwargs: Any) -> dict[str, Any]:
    pod = leader_pod("test-sample", 1, revision, **kwargs)
    pod["metadata"]["labels"][c.LABEL_GROUP_KEY] = "test-key"
    return pod


GROUP_LABELS = {
    c.LABEL_SET_NAME: "test-sample",
    c.LABEL_GROUP_INDEX: "1",
    c.LABEL_GROUP_KEY: "test-key",
}
POD_OWNER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "name": "test-sample-1",
    "uid": "uid-test-sample-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def want_worker(
    *,
    replicas: int,
    size: int,
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
    service_name: str = "test-sample",
    **spec_extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "test-sample-1",
        "namespace": "default",
        "labels": {**GROUP_LABELS, c.LABEL_TEMPLATE_REVISION_HASH: REV, c.LABEL_ROLE: c.ROLE_WORKER},
        "ownerReferences": [POD_OWNER],
    }
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": GROUP_LABELS},
            "template": {
                "metadata": {
                    "labels": {**GROUP_LABELS, c.LABEL_TEMPLATE_REVISION_HASH: REV},
                    "annotations": {
                        c.ANNOTATION_SIZE: str(size),
                        c.ANNOTATION_LEADER_NAME: "test-sample-1",
                        **(template_annotations or {}),
                        c.ANNOTATION_LEADER_ADDRESS: "test-sample-1.test-sample.default",
                    },
                },
                "spec": worker_pod_spec(),
            },
            "serviceName": service_name,
            "podManagementPolicy": "Parallel",
            "ordinals": {"start": 1},
            **spec_extra,
        },
    }


def _leader_with_subdomain(subdomain: str) -> dict[str, Any]:
    pod = leader_for()
    pod["spec"]["subdomain"] = subdomain
    return pod


def _with_leader_address(want: dict[str, Any], address: str) -> dict[str, Any]:
    want["spec"]["template"]["metadata"]["annotations"][c.ANNOTATION_LEADER_ADDRESS] = address
    return want


def _with_node_selector(want: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    want["spec"]["template"]["spec"]["nodeSelector"] = selector
    return want


@dataclass(frozen=True)
class WorkerCase:
    lws: LeaderWorkerSetBuilder
    want: dict[str, Any]
    revision: LeaderWorkerSetBuilder | None = None  # the spec stored in the leader's revision (default: live)
    leader: dict[str, Any] | None = None
    requests_tpus: bool = False
    node_selector: dict[str, str] | None = None


SUBGROUP_EXCLUSIVE = {c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: "topologyKey"}

WORKER_CASES = [
    pytest.param(
        WorkerCase(cached_lws().size(1), want_worker(replicas=0, size=1)), id="size 1 builds zero replicas"
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(2).annotations(EXCLUSIVE),
            want_worker(replicas=1, size=2, annotations=EXCLUSIVE, template_annotations=EXCLUSIVE),
        ),
        id="size 2, exclusive placement",
    ),
    pytest.param(
        WorkerCase(
            cached_lws()
            .size(2)
            .subgroup(2, c.SUBGROUP_POLICY_LEADER_EXCLUDED)
            .annotations(SUBGROUP_EXCLUSIVE),
            want_worker(
                replicas=1,
                size=2,
                annotations=SUBGROUP_EXCLUSIVE,
                template_annotations={
                    **SUBGROUP_EXCLUSIVE,
                    c.ANNOTATION_SUBGROUP_SIZE: "2",
                    c.ANNOTATION_SUBGROUP_POLICY_TYPE: "LeaderExcluded",
                },
            ),
        ),
        id="subgroups, subgroup exclusive placement",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(2).subgroup(2),
            want_worker(replicas=1, size=2, template_annotations={c.ANNOTATION_SUBGROUP_SIZE: "2"}),
        ),
        id="subgroup without a type gets no type annotation",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(1).volume_claims([PVC], {"whenDeleted": "Retain", "whenScaled": "Delete"}),
            want_worker(
                replicas=0,
                size=1,
                volumeClaimTemplates=[WANT_PVC],
                persistentVolumeClaimRetentionPolicy={"whenDeleted": "Retain", "whenScaled": "Delete"},
            ),
        ),
        id="volume claims and retention policy",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(4).annotations(EXCLUSIVE),
            want_worker(replicas=1, size=2, annotations=EXCLUSIVE, template_annotations=EXCLUSIVE),
            revision=cached_lws().size(2),
        ),
        id="shape from the leader's revision, topology from the live set",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(3),
            want_worker(replicas=2, size=3, template_annotations={c.ANNOTATION_LEADER_REQUESTS_TPUS: "true"}),
            requests_tpus=True,
        ),
        id="leader requesting TPUs is flagged",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(2).subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA),
            _with_leader_address(
                want_worker(replicas=1, size=2, service_name="test-sample-1"),
                "test-sample-1.test-sample-1.default",
            ),
            leader=_leader_with_subdomain("test-sample-1"),
        ),
        id="UniquePerReplica: service name is the leader's subdomain",
    ),
    pytest.param(
        WorkerCase(
            cached_lws().size(2).annotations(EXCLUSIVE),
            _with_node_selector(
                want_worker(replicas=1, size=2, annotations=EXCLUSIVE, template_annotations=EXCLUSIVE),
                {"zone": "user", "topologyKey": "pool-a"},
            ),
            revision=cached_lws()
            .size(2)
            .worker_template({"spec": worker_pod_spec() | {"nodeSelector": {"zone": "user"}}}),
            node_selector={"topologyKey": "pool-a"},
        ),
        id="exclusive placement pins workers, merged with the user node selector",
    ),
]


@pytest.mark.parametrize("case", WORKER_CASES)
def test_worker_statefulset(case: WorkerCase) -> None:
    lws = case.lws.obj()
    revision = (case.revision or case.lws).obj()
    got = worker_statefulset(
        lws,
        case.leader or leader_for(),
        revision["spec"],
        leader_requests_tpus=case.requests_tpus,
        node_selector=case.node_selector,
    )
    assert got == case.want


def test_worker_statefulset_metadata_from_live_set() -> None:
    lws = cached_lws().size(2).labels({"app": "x", c.LABEL_GROUP_INDEX: "user"}).annotations({"a": "b"}).obj()
    got = worker_statefulset(lws, leader_for(), lws["spec"])
    assert got["metadata"]["labels"] == {
        "app": "x",
        **GROUP_LABELS,
        c.LABEL_TEMPLATE_REVISION_HASH: REV,
        c.LABEL_ROLE: "worker",
    }
    assert got["metadata"]["annotations"] == {"a": "b"}
    # The role label is StatefulSet metadata only, not a pod label.
    assert c.LABEL_ROLE not in got["spec"]["template"]["metadata"]["labels"]


def test_worker_carries_the_leaders_revision_not_the_current_one() -> None:
    lws = cached_lws().size(2).obj()
    got = worker_statefulset(lws, leader_for("old-rev"), lws["spec"])
    assert got["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] == "old-rev"
    assert got["spec"]["template"]["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] == "old-rev"


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        pytest.param(c.SUBDOMAIN_SHARED, "test-sample", id="shared: the set's service"),
        pytest.param(
            c.SUBDOMAIN_UNIQUE_PER_REPLICA, "test-sample-1", id="unique per replica: the leader's name"
        ),
        pytest.param(None, "test-sample", id="no network config means shared"),
    ],
)
def test_worker_service_name_without_leader_subdomain(policy: str | None, want: str) -> None:
    lws = cached_lws().size(2).subdomain_policy(policy).obj()
    leader = leader_for()
    del leader["spec"]["subdomain"]
    assert worker_statefulset(lws, leader, lws["spec"])["spec"]["serviceName"] == want


@pytest.mark.parametrize(
    ("field", "want_ok"),
    [
        pytest.param(None, True, id="hostname and subdomain set"),
        pytest.param("hostname", False, id="no hostname"),
        pytest.param("subdomain", False, id="no subdomain"),
    ],
)
def test_require_leader_dns(field: str | None, want_ok: bool) -> None:
    leader = leader_for()
    if field is not None:
        del leader["spec"][field]
    if want_ok:
        require_leader_dns(leader)
        return
    with pytest.raises(
        WorkerStatefulSetError, match="leader pod default/test-sample-1 has no hostname or subdomain"
    ):
        require_leader_dns(leader)


@pytest.mark.parametrize(
    ("resources", "want_flag"),
    [
        pytest.param({"limits": {"google.com/tpu": "4"}}, True, id="leader with TPU limits"),
        pytest.param({"requests": {"google.com/tpu": "0"}}, False, id="zero TPUs"),
        pytest.param({}, False, id="no TPUs"),
    ],
)
def test_worker_statefulset_asks_the_leader_for_tpus(resources: dict[str, Any], want_flag: bool) -> None:
    lws = cached_lws().size(2).obj()
    leader = leader_for()
    leader["spec"]["containers"][0]["resources"] = resources
    annotations = worker_statefulset(lws, leader, lws["spec"])["spec"]["template"]["metadata"]["annotations"]
    assert (c.ANNOTATION_LEADER_REQUESTS_TPUS in annotations) is want_flag


def test_old_size_one_leader_gets_a_zero_replica_worker_statefulset() -> None:
    """During a 1→N resize, an old-revision leader reconciled by the pod controller (which
    reads the live size) gets workers built from its own revision: zero replicas."""
    live = cached_lws().size(3).obj()
    old_revision_spec = cached_lws().size(1).obj()["spec"]
    got = worker_statefulset(live, leader_for(), old_revision_spec)
    assert got["spec"]["replicas"] == 0
    assert got["spec"]["template"]["metadata"]["annotations"][c.ANNOTATION_SIZE] == "1"


def test_empty_leader_template_still_wins_over_worker_template() -> None:
    lws = cached_lws().obj()
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {}
    got = leader_statefulset(lws, partition=0, replicas=1, revision_key=REV)
    assert "spec" not in got["spec"]["template"]
