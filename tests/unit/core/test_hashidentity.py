"""Hash group identity: the leader Deployment, the group-ready condition, the group-replacement
admission order and the Deployment-based status."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.hashidentity import (
    AdmissionStep,
    admission_event,
    decide_admission,
    group_ready_status_patch,
    leader_deployment,
    plan_hash_status,
    remove_gate_patch,
    tearing_down_groups,
)
from leaderworkerset.core.scheduling.workloads import workload_name
from tests.support.builders import cached_lws, leader_pod

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GATE = {"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}


def hash_lws(
    replicas: int = 2, size: int = 3, policy: str = c.GROUP_REPLACEMENT_POST_TERMINATION
) -> dict[str, Any]:
    lws = cached_lws("lws").replicas(replicas).size(size).max_surge(1).obj()
    lws["spec"]["groupIdentity"] = c.GROUP_IDENTITY_HASH
    lws["spec"]["groupReplacementPolicy"] = policy
    return lws


# --- the leader Deployment ---------------------------------------------------------------------------


def test_leader_deployment_shape() -> None:
    deploy = leader_deployment(hash_lws(replicas=3, size=4), revision_key="rev")
    assert (deploy["apiVersion"], deploy["kind"], deploy["metadata"]["name"]) == (
        "apps/v1",
        "Deployment",
        "lws",
    )
    assert deploy["metadata"]["labels"] == {c.LABEL_SET_NAME: "lws", c.LABEL_TEMPLATE_REVISION_HASH: "rev"}
    assert deploy["metadata"]["ownerReferences"][0]["kind"] == c.LWS_KIND
    spec = deploy["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {c.LABEL_SET_NAME: "lws", c.LABEL_WORKER_INDEX: "0"}}
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1},
    }
    template = spec["template"]
    assert template["metadata"]["annotations"][c.ANNOTATION_GROUP_IDENTITY] == c.GROUP_IDENTITY_HASH
    assert template["metadata"]["annotations"][c.ANNOTATION_SIZE] == "4"
    assert template["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] == "rev"
    assert template["spec"]["subdomain"] == "lws"
    assert template["spec"]["readinessGates"] == [{"conditionType": c.READINESS_GATE_GROUP_READY}]
    assert "podManagementPolicy" not in spec
    assert "serviceName" not in spec


@pytest.mark.parametrize(
    ("scheduling", "want_mode"),
    [
        pytest.param(None, None, id="no spec.scheduling: no scheduling annotations"),
        pytest.param({}, c.SCHEDULING_MODE_REPLICA, id="replica level"),
        pytest.param({"schedulingPolicy": {"gang": {}}}, c.SCHEDULING_MODE_LWS, id="whole set"),
    ],
)
def test_leader_template_names_the_workload_for_the_pod_webhook(
    scheduling: dict[str, Any] | None, want_mode: str | None
) -> None:
    lws = hash_lws()
    lws["metadata"]["uid"] = "uid-1"
    if scheduling is not None:
        lws["spec"]["scheduling"] = scheduling
    annotations = leader_deployment(lws, revision_key="rev")["spec"]["template"]["metadata"]["annotations"]
    assert annotations.get(c.ANNOTATION_WORKLOAD_AWARE_SCHEDULING) == want_mode
    want_name = None if want_mode is None else workload_name("lws", "uid-1")
    assert annotations.get(c.ANNOTATION_WORKLOAD_NAME) == want_name
    assert annotations[c.ANNOTATION_GROUP_IDENTITY] == c.GROUP_IDENTITY_HASH


def test_size_one_has_no_readiness_gate_and_percentages_are_verbatim() -> None:
    lws = hash_lws(size=1)
    lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].update(maxSurge="25%", maxUnavailable="50%")
    deploy = leader_deployment(lws, revision_key="rev")
    assert "readinessGates" not in deploy["spec"]["template"]["spec"]
    assert deploy["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "50%", "maxSurge": "25%"}


# --- group-ready -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "ready", "want"),
    [
        pytest.param(None, True, ("True", "WorkerStatefulSetReady"), id="new True"),
        pytest.param(None, False, ("False", "WorkerStatefulSetNotReady"), id="new False"),
        pytest.param("False", True, ("True", "WorkerStatefulSetReady"), id="flips to True"),
        pytest.param("True", True, None, id="unchanged: no write"),
    ],
)
def test_group_ready_status_patch(stored: str | None, ready: bool, want: tuple[str, str] | None) -> None:
    pod = leader_pod("lws", 0, "rev")
    if stored is not None:
        pod["status"]["conditions"].append({"type": c.POD_CONDITION_GROUP_READY, "status": stored})
    patch = group_ready_status_patch(pod, ready, NOW)
    if want is None:
        assert patch is None
        return
    assert patch is not None
    conditions = patch["status"]["conditions"]
    assert [cond["type"] for cond in conditions] == [c.POD_CONDITION_GROUP_READY]  # merged by type
    assert (conditions[-1]["status"], conditions[-1]["reason"]) == want


# --- admission (the group-replacement gate) --------------------------------------------------------


def leader(
    name: str,
    revision: str = "rev",
    *,
    gated: bool = False,
    created: str = "2026-01-01T00:00:00Z",
    deleting: bool = False,
    exhausted: bool = False,
    group: str | None = None,
) -> dict[str, Any]:
    annotations = {c.ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: "true"} if exhausted else None
    pod = leader_pod(
        "lws", 0, revision, name=name, group_index=group or name, deleting=deleting, annotations=annotations
    )
    pod["metadata"]["creationTimestamp"] = created
    if gated:
        pod["spec"]["schedulingGates"] = [GATE]
    return pod


def worker_of(group: str) -> dict[str, Any]:
    pod = leader_pod("lws", 0, "rev", name=f"{group}-1", group_index=group)
    pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] = "1"
    return pod


@dataclass(frozen=True)
class AdmitCase:
    pods: list[dict[str, Any]]
    candidate: str
    want: AdmissionStep
    replicas: int = 2
    policy: str = c.GROUP_REPLACEMENT_POST_TERMINATION
    desired: str = "rev"
    want_blocking: int = 0
    extra: list[dict[str, Any]] = field(default_factory=list)


ADMIT_CASES = [
    pytest.param(
        AdmitCase([leader("a", gated=True), leader("b", gated=True)], "a", AdmissionStep.ADMIT),
        id="fresh set admits",
    ),
    pytest.param(
        AdmitCase([leader("a"), leader("b"), leader("c", gated=True)], "c", AdmissionStep.DEFER),
        id="per-revision cap: spec.replicas ungated groups",
    ),
    pytest.param(
        AdmitCase([leader("a", gated=True, revision="old")], "a", AdmissionStep.DEFER),
        id="outdated revision stays gated",
    ),
    pytest.param(
        AdmitCase(
            [leader("a"), leader("b", deleting=True), worker_of("b"), leader("c", gated=True)],
            "c",
            AdmissionStep.DEFER_TEARDOWN,
            want_blocking=1,
        ),
        id="PostTermination waits for the terminating group",
    ),
    pytest.param(
        AdmitCase(
            [leader("a"), leader("b", deleting=True), worker_of("b"), leader("c", gated=True)],
            "c",
            AdmissionStep.ADMIT,
            policy=c.GROUP_REPLACEMENT_IMMEDIATE,
        ),
        id="Immediate starts the replacement while the old group terminates",
    ),
    pytest.param(
        AdmitCase(
            [
                leader("b", deleting=True),
                worker_of("b"),
                leader("x", deleting=True, group="x"),
                worker_of("x"),
                leader("c", gated=True, created="2026-01-01T00:00:01Z"),
                leader("d", gated=True, created="2026-01-01T00:00:02Z"),
                leader("e", gated=True, created="2026-01-01T00:00:03Z"),
            ],
            "c",
            AdmissionStep.ADMIT,
            replicas=3,
        ),
        id="FIFO: G - T oldest gated leaders proceed",
    ),
    pytest.param(
        AdmitCase(
            [
                leader("b", deleting=True),
                worker_of("b"),
                leader("c", gated=True, created="2026-01-01T00:00:01Z"),
                leader("d", gated=True, created="2026-01-01T00:00:02Z"),
            ],
            "d",
            AdmissionStep.DEFER_TEARDOWN,
            want_blocking=1,
        ),
        id="FIFO: the youngest waits",
    ),
    pytest.param(
        AdmitCase(
            [leader("a", exhausted=True, deleting=True), leader("c", gated=True)],
            "c",
            AdmissionStep.DEFER_TEARDOWN,
            replicas=3,
            policy=c.GROUP_REPLACEMENT_IMMEDIATE,
            want_blocking=1,
        ),
        id="Immediate still waits for retained groups",
    ),
]


@pytest.mark.parametrize("case", ADMIT_CASES)
def test_decide_admission(case: AdmitCase) -> None:
    pods = case.pods
    candidate = next(p for p in pods if p["metadata"]["name"] == case.candidate)
    admission = decide_admission(hash_lws(case.replicas, policy=case.policy), candidate, pods, case.desired)
    assert (admission.step, admission.blocking) == (case.want, case.want_blocking)


def test_admit_case_count() -> None:
    assert len(ADMIT_CASES) == 8


def test_tearing_down_groups_counts_groups_not_pods() -> None:
    pods = [leader("a"), worker_of("a"), leader("b", deleting=True), worker_of("b"), worker_of("z")]
    assert tearing_down_groups(pods) == 2  # b (leader terminating), z (leader gone)


def test_remove_gate_patch_and_events() -> None:
    pod = leader("a", gated=True)
    pod["spec"]["schedulingGates"].append({"name": "other"})
    pod["metadata"]["annotations"] = {c.ANNOTATION_POD_DELETION_COST: c.POD_DELETION_COST_WAITING_LEADER}
    assert remove_gate_patch(pod) == {
        "spec": {"schedulingGates": [{"name": "other"}]},
        "metadata": {"annotations": {c.ANNOTATION_POD_DELETION_COST: None}},
    }
    assert remove_gate_patch(leader("b", gated=True)) == {"spec": {"schedulingGates": None}}
    admitted = admission_event(pod, decide_admission(hash_lws(), pod, [pod], "rev"))
    assert admitted is not None
    assert (admitted.reason, admitted.message) == (
        "GroupReplacementAdmitted",
        "Leader pod a admitted for scheduling",
    )


# --- status -------------------------------------------------------------------------------------


def deployment(
    replicas: int, ready: int, updated: int, *, revision: str = "rev", observed: int = 1
) -> dict[str, Any]:
    return {
        "metadata": {"name": "lws", "generation": 1, "labels": {c.LABEL_TEMPLATE_REVISION_HASH: revision}},
        "status": {
            "observedGeneration": observed,
            "replicas": replicas,
            "readyReplicas": ready,
            "updatedReplicas": updated,
        },
    }


@dataclass(frozen=True)
class StatusCase:
    deploy: dict[str, Any]
    leaders: list[dict[str, Any]]
    want_types: list[tuple[str, str]]
    want_available: bool = False


STATUS_CASES = [
    pytest.param(
        StatusCase(deployment(2, 2, 2), [leader("a"), leader("b")], [(c.CONDITION_AVAILABLE, "True")], True),
        id="every group ready on the current revision: Available",
    ),
    pytest.param(
        StatusCase(deployment(2, 1, 2), [leader("a"), leader("b")], [(c.CONDITION_PROGRESSING, "True")]),
        id="a group not ready: Progressing",
    ),
    pytest.param(
        StatusCase(
            deployment(3, 2, 1),
            [leader("a", revision="old"), leader("b", revision="old"), leader("c")],
            [(c.CONDITION_UPDATE_IN_PROGRESS, "True")],
        ),
        id="old-revision leaders: UpdateInProgress (short-circuit sets one at a time)",
    ),
    pytest.param(
        StatusCase(
            deployment(2, 2, 2, observed=0),
            [leader("a"), leader("b")],
            [(c.CONDITION_UPDATE_IN_PROGRESS, "True")],
        ),
        id="Deployment has not observed its generation yet",
    ),
]


@pytest.mark.parametrize("case", STATUS_CASES)
def test_plan_hash_status(case: StatusCase) -> None:
    plan = plan_hash_status(hash_lws(), case.deploy, case.leaders, NOW)
    assert [(cond["type"], cond["status"]) for cond in plan.status["conditions"]] == case.want_types
    assert plan.update_done is case.want_available
    deploy_status = case.deploy["status"]
    assert (plan.status["replicas"], plan.status["readyReplicas"], plan.status["updatedReplicas"]) == (
        deploy_status["replicas"],
        deploy_status["readyReplicas"],
        deploy_status["updatedReplicas"],
    )
    assert plan.event is not None


def test_status_case_count() -> None:
    assert len(STATUS_CASES) == 4


def test_a_group_replaced_ahead_of_a_drain_keeps_the_set_available() -> None:
    """A drain surge (core/disruptionbudget/drainsurge.py) is one leader more for a while, not a rollout."""
    lws = hash_lws()
    lws["metadata"]["annotations"] = {ext.ANNOTATION_DISRUPTION_BUDGET: "1"}
    leaders = [leader("a"), leader("b"), leader("c")]
    unmarked = plan_hash_status(lws, deployment(3, 3, 3), leaders, NOW)
    leaders[0]["metadata"]["annotations"] = {ext.ANNOTATION_DRAIN_SURGE: "true"}
    surged = plan_hash_status(lws, deployment(3, 3, 3), leaders, NOW)
    assert (unmarked.update_done, surged.update_done) == (False, True)
    assert [cond["type"] for cond in surged.status["conditions"]] == [c.CONDITION_AVAILABLE]
    assert surged.status["replicas"] == 3
