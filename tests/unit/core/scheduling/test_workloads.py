"""The kubernetes provider's pure parts: names, templates, PodGroups, drift."""

from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core.scheduling import podgroups
from leaderworkerset.core.scheduling import workloads as wl
from leaderworkerset.core.scheduling.gang import SchedulingError
from tests.support.builders import cached_lws


# Golden values computed with upstream's own code path (fnv32a over dump.ForHash(types.UID),
# apimachinery rand.SafeEncodeString), Go 1.26 / k8s.io/utils of the oracle module.
@pytest.mark.parametrize(
    ("uid", "want"),
    [
        pytest.param("test-lws-uid", "test-lws-8697f9b6f9", id="upstream test uid"),
        pytest.param("test-sample-uid", "test-lws-7f578ff559", id="upstream sample uid"),
        pytest.param("5f1d2c3a-0b4e-4c6d-9e8f-a1b2c3d4e5f6", "test-lws-75cf54997b", id="a real-looking uid"),
        pytest.param("", "test-lws-69ddf977d7", id="empty uid"),
    ],
)
def test_workload_name_golden(uid: str, want: str) -> None:
    assert wl.workload_name("test-lws", uid) == want


def test_long_names_are_truncated_to_a_subdomain() -> None:
    name = wl.workload_name("a" * 300, "test-lws-uid")
    assert len(name) == 253
    assert name.endswith("-8697f9b6f9")
    group = wl.runtime_name(name, "12", c.ROLE_WORKER, "5d4c6b8f9")
    assert len(group) == 253
    assert group.endswith("-8697f9b6f9-12-worker-5d4c6b8f9")


@dataclass(frozen=True)
class PodCase:
    annotations: dict[str, str]
    worker_index: str = "0"
    want: str | None = None


_W = "test-lws-8697f9b6f9"
POD_CASES = [
    pytest.param(PodCase({}, want=None), id="not workload-aware: untouched"),
    pytest.param(
        PodCase(
            {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "lws", c.ANNOTATION_WORKLOAD_NAME: _W}, want=f"{_W}-lws"
        ),
        id="whole set",
    ),
    pytest.param(
        PodCase(
            {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "replica", c.ANNOTATION_WORKLOAD_NAME: _W},
            want=f"{_W}-2-rev1",
        ),
        id="replica",
    ),
    pytest.param(
        PodCase(
            {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "true", c.ANNOTATION_WORKLOAD_NAME: _W},
            want=f"{_W}-2-rev1",
        ),
        id="legacy true means replica",
    ),
    pytest.param(
        PodCase(
            {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "role", c.ANNOTATION_WORKLOAD_NAME: _W},
            want=f"{_W}-2-leader-rev1",
        ),
        id="role: leader",
    ),
    pytest.param(
        PodCase(
            {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "role", c.ANNOTATION_WORKLOAD_NAME: _W},
            worker_index="3",
            want=f"{_W}-2-worker-rev1",
        ),
        id="role: worker",
    ),
    pytest.param(
        PodCase({c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "replica"}, want="test-2-rev1"),
        id="no workload name: the set name stands in",
    ),
]


@pytest.mark.parametrize("case", POD_CASES)
def test_pod_group_of_a_pod(case: PodCase) -> None:
    pod = {
        "metadata": {
            "annotations": case.annotations,
            "labels": {
                c.LABEL_SET_NAME: "test",
                c.LABEL_GROUP_INDEX: "2",
                c.LABEL_TEMPLATE_REVISION_HASH: "rev1",
                c.LABEL_WORKER_INDEX: case.worker_index,
            },
        },
        "spec": {},
    }
    wl.inject_scheduling_group(pod)
    assert pod["spec"].get("schedulingGroup") == (None if case.want is None else {"podGroupName": case.want})


def test_pod_case_count() -> None:
    assert len(POD_CASES) == 7


def test_unknown_mode_is_an_error() -> None:
    pod = {"metadata": {"annotations": {c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING: "galaxy"}}, "spec": {}}
    with pytest.raises(ValueError, match="unsupported workload-aware scheduling mode 'galaxy'"):
        wl.inject_scheduling_group(pod)


@dataclass(frozen=True)
class TemplateCase:
    scheduling: dict[str, Any]
    replicas: int = 2
    size: int = 3
    want: list[dict[str, Any]] = field(default_factory=list)


TEMPLATE_CASES = [
    pytest.param(
        TemplateCase({}, want=[{"name": "replica", "schedulingPolicy": {"gang": {"minCount": 3}}}]),
        id="empty: gang per replica of size",
    ),
    pytest.param(
        TemplateCase(
            {"replica": {"schedulingPolicy": {"basic": {}}}},
            want=[{"name": "replica", "schedulingPolicy": {"basic": {}}}],
        ),
        id="replica basic",
    ),
    pytest.param(
        TemplateCase(
            {"schedulingPolicy": {"gang": {}}},
            want=[{"name": "lws", "schedulingPolicy": {"gang": {"minCount": 6}}}],
        ),
        id="whole set gang: replicas x size",
    ),
    pytest.param(
        TemplateCase(
            {"schedulingPolicy": {"gang": {}}},
            replicas=0,
            want=[{"name": "lws", "schedulingPolicy": {"gang": {"minCount": 1}}}],
        ),
        id="whole set at zero replicas keeps a valid placeholder",
    ),
    pytest.param(
        TemplateCase(
            {"disruptionMode": {"all": {}}},
            want=[{"name": "lws", "schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}],
        ),
        id="whole set without policy: basic",
    ),
    pytest.param(
        TemplateCase(
            {"replica": {"worker": {"schedulingPolicy": {"gang": {}}}}},
            want=[
                {"name": "leader", "schedulingPolicy": {"basic": {}}},
                {"name": "worker", "schedulingPolicy": {"gang": {"minCount": 2}}},
            ],
        ),
        id="role: leader synthesised basic, worker gang of size-1",
    ),
    pytest.param(
        TemplateCase(
            {"replica": {"schedulingConstraints": {"topology": [{"key": "zone"}]}}},
            want=[
                {
                    "name": "replica",
                    "schedulingPolicy": {"gang": {"minCount": 3}},
                    "schedulingConstraints": {"topology": [{"key": "zone"}]},
                }
            ],
        ),
        id="replica topology carried over",
    ),
]


@pytest.mark.parametrize("case", TEMPLATE_CASES)
def test_workload_templates(case: TemplateCase) -> None:
    lws = cached_lws().replicas(case.replicas).size(case.size).scheduling(case.scheduling).obj()
    assert wl.workload_templates(lws) == case.want


def test_template_case_count() -> None:
    assert len(TEMPLATE_CASES) == 7


def test_desired_workload_is_controlled_by_the_lws() -> None:
    lws = cached_lws().scheduling({}).obj()
    workload = wl.desired_workload(lws)
    assert workload["metadata"]["name"] == wl.workload_name("test-sample", "lws-uid")
    assert workload["metadata"]["labels"] == {c.LABEL_SET_NAME: "test-sample"}
    assert workload["spec"]["controllerRef"] == {
        "apiGroup": c.LWS_GROUP,
        "kind": c.LWS_KIND,
        "name": "test-sample",
    }
    assert wl.controlled_by(workload, lws)
    other = cached_lws().scheduling({}).obj()
    other["metadata"]["uid"] = "another-incarnation"
    assert not wl.controlled_by(workload, other)


@pytest.mark.parametrize(
    ("scheduling", "identity", "replicas", "want_names", "want_levels"),
    [
        pytest.param(
            {}, c.GROUP_IDENTITY_ORDINAL, 2, ["0-rev", "1-rev"], {"replica"}, id="replica: per index"
        ),
        pytest.param(
            {"replica": {"leader": {}}},
            c.GROUP_IDENTITY_ORDINAL,
            1,
            ["0-leader-rev", "0-worker-rev"],
            {"role"},
            id="role: leader and worker",
        ),
        pytest.param(
            {"schedulingPolicy": {"gang": {}}}, c.GROUP_IDENTITY_ORDINAL, 3, ["lws"], {"lws"}, id="lws: one"
        ),
        pytest.param(
            {"schedulingPolicy": {"gang": {}}}, c.GROUP_IDENTITY_ORDINAL, 0, [], set(), id="lws at zero: none"
        ),
        pytest.param({}, c.GROUP_IDENTITY_HASH, 2, [], set(), id="hash: left to the pod controller"),
    ],
)
def test_desired_pod_groups(
    scheduling: dict[str, Any], identity: str, replicas: int, want_names: list[str], want_levels: set[str]
) -> None:
    lws = cached_lws().size(2).scheduling(scheduling).group_identity(identity).obj()
    prefix = wl.lws_workload_name(lws) + "-"
    groups = podgroups.desired_pod_groups(lws, replicas, "rev")
    assert [g.name.removeprefix(prefix) for g in groups] == want_names
    assert {g.labels[c.LABEL_SCHEDULING_LEVEL] for g in groups} == want_levels


def _persisted(lws: dict[str, Any]) -> dict[str, Any]:
    workload = wl.desired_workload(lws)
    workload["metadata"]["uid"] = "workload-uid"
    return workload


def test_materialized_pod_group_references_the_workload() -> None:
    lws = cached_lws().size(3).scheduling({}).obj()
    workload = _persisted(lws)
    group = podgroups.desired_pod_groups(lws, 1, "rev")[0]
    got = podgroups.materialize_pod_group(lws, workload, group)
    assert got["spec"] == {
        "workloadRef": {"workloadName": wl.lws_workload_name(lws), "templateName": "replica"},
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    assert [r["kind"] for r in got["metadata"]["ownerReferences"]] == [c.LWS_KIND, "Workload"]
    assert got["metadata"]["ownerReferences"][1]["controller"] is False
    delegated = podgroups.materialize_pod_group(
        lws,
        {
            **workload,
            "spec": {"podGroupTemplates": [{"name": "parent-tmpl", "schedulingPolicy": {"basic": {}}}]},
        },
        group,
        "parent-tmpl",
    )
    assert [r["kind"] for r in delegated["metadata"]["ownerReferences"]] == [c.LWS_KIND]
    assert delegated["spec"]["workloadRef"]["templateName"] == "parent-tmpl"


@dataclass(frozen=True)
class DriftCase:
    new_scheduling: dict[str, Any] | None = None
    new_replicas: int = 2
    want_update: bool = False
    want_error: str | None = None


DRIFT_CASES = [
    pytest.param(DriftCase(), id="unchanged: no write"),
    pytest.param(DriftCase(new_replicas=4, want_update=True), id="whole-set scale: minCount follows"),
    pytest.param(
        DriftCase(new_scheduling={"schedulingPolicy": {"basic": {}}}, want_error="immutable scheduling"),
        id="policy kind changed: drift",
    ),
    pytest.param(
        DriftCase(
            new_scheduling={"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}},
            want_error="immutable scheduling",
        ),
        id="disruption mode changed: drift",
    ),
    pytest.param(
        DriftCase(new_scheduling={"replica": {}}, want_error="template set drift"),
        id="template set changed: drift",
    ),
]


@pytest.mark.parametrize("case", DRIFT_CASES)
def test_workload_drift(case: DriftCase) -> None:
    old = cached_lws().replicas(2).size(2).scheduling({"schedulingPolicy": {"gang": {}}}).obj()
    current = _persisted(old)
    new = (
        cached_lws()
        .replicas(case.new_replicas)
        .size(2)
        .scheduling(case.new_scheduling or {"schedulingPolicy": {"gang": {}}})
        .obj()
    )
    if case.want_error:
        with pytest.raises(SchedulingError, match=case.want_error) as raised:
            wl.workload_update(current, wl.desired_workload(new), new)
        assert raised.value.reason == c.REASON_INVALID_SCHEDULING_CONFIGURATION
        return
    updated = wl.workload_update(current, wl.desired_workload(new), new)
    assert (updated is not None) is case.want_update
    if updated is not None:
        assert updated["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 8


def test_drift_case_count() -> None:
    assert len(DRIFT_CASES) == 5


def test_pod_group_drift() -> None:
    lws = cached_lws().replicas(2).size(2).scheduling({"schedulingPolicy": {"gang": {}}}).obj()
    workload = _persisted(lws)
    group = podgroups.desired_pod_groups(lws, 2, "rev")[0]
    current = podgroups.materialize_pod_group(lws, workload, group)
    current["spec"].update({"priority": 0, "disruptionMode": {"single": {}}})  # server defaults
    assert podgroups.pod_group_update(current, current, allow_min_count_update=True) is None
    scaled = cached_lws().replicas(3).size(2).scheduling({"schedulingPolicy": {"gang": {}}}).obj()
    desired = podgroups.materialize_pod_group(
        scaled, wl.desired_workload(scaled) | {"metadata": workload["metadata"]}, group
    )
    updated = podgroups.pod_group_update(current, desired, allow_min_count_update=True)
    assert updated is not None
    assert updated["spec"]["schedulingPolicy"]["gang"]["minCount"] == 6
    with pytest.raises(SchedulingError, match="immutable scheduling configuration drift"):
        podgroups.pod_group_update(current, desired, allow_min_count_update=False)


def test_cleanup_keeps_desired_and_referenced_groups() -> None:
    lws = cached_lws().scheduling({}).obj()
    workload = _persisted(lws)
    groups = [
        podgroups.materialize_pod_group(lws, workload, g) for g in podgroups.desired_pod_groups(lws, 3, "rev")
    ]
    foreign = {"metadata": {"name": "foreign", "ownerReferences": []}}
    going = podgroups.materialize_pod_group(lws, workload, podgroups.desired_pod_groups(lws, 4, "rev")[3])
    going["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"  # behind its protection finalizer
    names = [g["metadata"]["name"] for g in groups]
    doomed = podgroups.pod_groups_to_delete(
        lws, [*groups, foreign, going], desired={names[0]}, in_use={names[1]}
    )
    assert [g["metadata"]["name"] for g in doomed] == [names[2]]


def _hash_leader(key: str, *, deleting: bool = False, worker: bool = False) -> dict[str, Any]:
    labels = {
        c.LABEL_SET_NAME: "test-sample",
        c.LABEL_WORKER_INDEX: "1" if worker else c.LEADER_WORKER_INDEX,
        c.LABEL_GROUP_INDEX: key,
        c.LABEL_TEMPLATE_REVISION_HASH: "rev",
    }
    meta: dict[str, Any] = {"name": f"leader-{key}", "namespace": "default", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    return {"metadata": meta}


@dataclass(frozen=True)
class LiveCase:
    scheduling: dict[str, Any]
    identity: str
    pods: list[dict[str, Any]]
    want_suffixes: set[str]


LIVE_CASES = [
    pytest.param(
        LiveCase(
            {"replica": {"worker": {}}},
            c.GROUP_IDENTITY_HASH,
            [_hash_leader("k1")],
            {"k1-leader-rev", "k1-worker-rev"},
        ),
        id="role mode: the worker PodGroup is kept before any worker names it",
    ),
    pytest.param(
        LiveCase(
            {}, c.GROUP_IDENTITY_HASH, [_hash_leader("k1"), _hash_leader("k2", deleting=True)], {"k1-rev"}
        ),
        id="a deleting leader keeps nothing (its pods still may, by name)",
    ),
    pytest.param(
        LiveCase({}, c.GROUP_IDENTITY_HASH, [_hash_leader("k1", worker=True)], set()),
        id="workers keep only what they name",
    ),
    pytest.param(
        LiveCase({}, c.GROUP_IDENTITY_HASH, [{"metadata": {"labels": {c.LABEL_WORKER_INDEX: "0"}}}], set()),
        id="a leader without labels names nothing",
    ),
    pytest.param(
        LiveCase({}, c.GROUP_IDENTITY_ORDINAL, [_hash_leader("0")], set()),
        id="ordinal: the index set decides",
    ),
]


@pytest.mark.parametrize("case", LIVE_CASES)
def test_live_hash_groups_keep_their_pod_groups(case: LiveCase) -> None:
    lws = cached_lws().size(2).scheduling(case.scheduling).group_identity(case.identity).obj()
    prefix = wl.lws_workload_name(lws) + "-"
    got = podgroups.live_group_pod_group_names(lws, case.pods)
    assert {name.removeprefix(prefix) for name in got} == case.want_suffixes


def test_live_case_count() -> None:
    assert len(LIVE_CASES) == 5


@pytest.mark.parametrize(
    ("field", "value", "gate"),
    [
        (
            "resourceClaims",
            [{"name": "imex", "resourceClaimTemplateName": "imex"}],
            "DRAWorkloadResourceClaims",
        ),
        ("schedulingConstraints", {"topology": [{"key": "zone"}]}, "TopologyAwareWorkloadScheduling"),
    ],
)
def test_a_gated_field_the_api_server_dropped_is_named_with_its_gate_not_called_drift(
    field: str, value: Any, gate: str
) -> None:
    lws = cached_lws().replicas(2).size(2).scheduling({"replica": {field: value}}).obj()
    sent = wl.desired_workload(lws)
    assert sent["spec"]["podGroupTemplates"][0][field] == value
    assert wl.dropped_by_server(sent, sent) is None  # kept: nothing to say
    stored = _persisted(lws)
    del stored["spec"]["podGroupTemplates"][0][field]  # what the API server keeps with the gate off
    dropped = wl.dropped_by_server(sent, stored)
    assert dropped is not None
    assert dropped.reason == c.REASON_INVALID_SCHEDULING_CONFIGURATION
    assert f"dropped podGroupTemplates[replica].{field} because its feature gate {gate} is off" in str(
        dropped
    )
    with pytest.raises(SchedulingError, match=f"feature gate {gate}"):
        wl.workload_update(stored, sent, lws)
