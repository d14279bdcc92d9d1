"""`lws plan`'s pure builder (core/plan/): steps from the controllers' simulations, capacity,
accelerators, time to ready and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.core import plan
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.core.disaggregated.rollout import ChildView
from leaderworkerset.core.disaggregated.rollout_inputs import role_targets
from leaderworkerset.core.observe import readiness
from leaderworkerset.core.rollout.revision import RevisionMatchCache, plan_revision
from leaderworkerset.core.scheduling import accelerators
from tests.support.builders import (
    LeaderWorkerSetBuilder,
    cached_lws,
    ds,
    ds_role,
    leader_pod,
    leader_sts,
    worker_statefulset,
)

Obj = dict[str, Any]
GPU = accelerators.NVIDIA_GPU
NEW_IMAGE = "registry.example/new:2"


def gpu_lws(replicas: int = 4, *, surge: int = 1, unavailable: int = 0) -> LeaderWorkerSetBuilder:
    """4 groups of a leader and a worker, one GPU each (2 per group)."""
    return (
        cached_lws("plan")
        .replicas(replicas)
        .size(2)
        .leader_template()
        .leader_resources({GPU: "1"})
        .worker_requests({GPU: "1"})
        .max_surge(surge)
        .max_unavailable(unavailable)
    )


def live_state(live: Obj) -> tuple[Obj, list[Obj]]:
    """The leader StatefulSet and ControllerRevision the controller made for `live`, steady."""
    revision = plan_revision(live, None, [], RevisionMatchCache()).revision
    key = revision["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    sts = {
        "metadata": {"name": live["metadata"]["name"], "labels": {c.LABEL_TEMPLATE_REVISION_HASH: key}},
        "spec": {"replicas": live["spec"]["replicas"], "updateStrategy": {"rollingUpdate": {"partition": 0}}},
    }
    return sts, [revision]


def lws_plan(live: Obj, new: Obj, **kwargs: Any) -> plan.Plan:
    sts, revisions = live_state(live)
    return plan.plan_leaderworkerset(live, new, leader_statefulset=sts, revisions=revisions, **kwargs)


@dataclass(frozen=True)
class LwsCase:
    live: Obj
    new: Obj
    want_change: str
    want_states: tuple[tuple[int, int], ...]  # (updated, old) groups after each step
    want_down: tuple[tuple[str, ...], ...]
    want_up: tuple[tuple[str, ...], ...]
    want_capacity: tuple[int, ...]
    want_peak: dict[str, int] = field(default_factory=dict)
    want_warnings: int = 0


LWS_CASES = [
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws().worker_image(NEW_IMAGE).obj(),
            want_change="rollout",
            # One surge group first, then one old group at a time from the top, then the surge goes.
            want_states=((1, 4), (2, 3), (3, 2), (4, 1), (5, 0), (4, 0)),
            want_down=((), ("3",), ("2",), ("1",), ("0",), ("4",)),
            want_up=(("4",), ("3",), ("2",), ("1",), ("0",), ()),
            want_capacity=(100, 100, 100, 100, 100, 100),
            want_peak={GPU: 2},
        ),
        id="replicas4-surge1-unavailable0",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws(unavailable=1).obj(),
            new=gpu_lws(unavailable=1).worker_image(NEW_IMAGE).obj(),
            want_change="rollout",
            # The surge covers one unavailable group, maxUnavailable another: two at a time.
            want_states=((1, 4), (3, 2), (5, 0), (4, 0)),
            want_down=((), ("2", "3"), ("0", "1"), ("4",)),
            want_up=(("4",), ("2", "3"), ("0", "1"), ()),
            want_capacity=(100, 75, 75, 100),
            want_peak={GPU: 2},
        ),
        id="replicas4-surge1-unavailable1",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws(surge=0, unavailable=1).obj(),
            new=gpu_lws(surge=0, unavailable=1).worker_image(NEW_IMAGE).obj(),
            want_change="rollout",
            want_states=((1, 3), (2, 2), (3, 1), (4, 0)),
            want_down=(("3",), ("2",), ("1",), ("0",)),
            want_up=(("3",), ("2",), ("1",), ("0",)),
            want_capacity=(75, 75, 75, 75),
        ),
        id="replicas4-no-surge-needs-no-extra-accelerators",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().partition(2).obj(),
            new=gpu_lws().partition(2).worker_image(NEW_IMAGE).obj(),
            want_change="rollout",
            # Groups 0 and 1 stay old, so the surge group is never released: warned.
            want_states=((1, 4), (2, 3), (3, 2)),
            want_down=((), ("3",), ("2",)),
            want_up=(("4",), ("3",), ("2",)),
            want_capacity=(100, 100, 100),
            want_peak={GPU: 2},
            want_warnings=1,
        ),
        id="partition2-holds-old-groups-and-the-surge",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws(6).obj(),
            want_change="scale only",
            want_states=((0, 6),),
            want_down=((),),
            want_up=(("4", "5"),),
            want_capacity=(66,),
            want_peak={GPU: 4},
        ),
        id="replicas-only-scales",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws(2).obj(),
            want_change="scale only",
            want_states=((0, 2),),
            want_down=(("2", "3"),),
            want_up=((),),
            want_capacity=(100,),
        ),
        id="scale-down-only",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws(unavailable=2).obj(),
            want_change="no rollout",
            want_states=(),
            want_down=(),
            want_up=(),
            want_capacity=(),
        ),
        id="rollout-knobs-only-no-rollout",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().max_group_restarts(1).obj(),
            new=gpu_lws().max_group_restarts(4).obj(),
            want_change="no rollout",
            want_states=(),
            want_down=(),
            want_up=(),
            want_capacity=(),
        ),
        id="restart-budget-only-no-rollout",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws().obj(),
            want_change="no change",
            want_states=(),
            want_down=(),
            want_up=(),
            want_capacity=(),
        ),
        id="same-spec-no-change",
    ),
    pytest.param(
        LwsCase(
            live=gpu_lws().obj(),
            new=gpu_lws().worker_image(NEW_IMAGE).group_identity(c.GROUP_IDENTITY_HASH).obj(),
            want_change="no rollout",
            want_states=(),
            want_down=(),
            want_up=(),
            want_capacity=(),
            want_warnings=1,
        ),
        id="hash-identity-is-planned-by-the-deployment",
    ),
]


@pytest.mark.parametrize("case", LWS_CASES)
def test_lws_plan(case: LwsCase) -> None:
    result = lws_plan(case.live, case.new)
    assert result.change == case.want_change
    assert tuple((s.updated, s.old) for s in result.steps) == case.want_states
    assert tuple(s.down for s in result.steps) == case.want_down
    assert tuple(s.up for s in result.steps) == case.want_up
    assert tuple(dict(s.capacity)["groups"] for s in result.steps) == case.want_capacity
    assert dict(result.peak_extra_accelerators) == case.want_peak
    assert len(result.warnings) == case.want_warnings


def test_lws_case_count() -> None:
    assert len(LWS_CASES) == 10


def test_a_bigger_template_counts_old_and_new_groups_apart() -> None:
    # Old groups keep 2 GPUs, new ones take 4: the extra grows with every replaced group and the
    # end state still needs 8 more than today, beyond the surge peak of 12.
    new = gpu_lws().worker_requests({GPU: "3"}).worker_image(NEW_IMAGE).obj()
    result = lws_plan(gpu_lws().obj(), new)
    assert [s.extra_accelerators.get(GPU, 0) for s in result.steps] == [4, 6, 8, 10, 12, 8]
    assert result.peak_extra_accelerators == {GPU: 12}


def test_the_rollout_detection_is_the_controllers_revision_match() -> None:
    # A spec the API server stored with an explicit default is the same revision: no rollout.
    live = gpu_lws().obj()
    new = gpu_lws().obj()
    new["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {}
    assert lws_plan(live, new).change == "no rollout"


# --- accelerators ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodCase:
    spec: Obj
    want: dict[str, int]


def container(**resources: dict[str, str]) -> Obj:
    return {"name": "c", "image": "i", "resources": resources}


POD_CASES = [
    pytest.param(
        PodCase({"containers": [container(requests={GPU: "2", "cpu": "1"})]}, {GPU: 2}), id="requests"
    ),
    pytest.param(
        PodCase({"containers": [container(limits={GPU: "2"})]}, {GPU: 2}), id="limits-default-requests"
    ),
    pytest.param(
        PodCase(
            {"containers": [container(limits={GPU: "1"}), container(limits={c.TPU_RESOURCE_NAME: "4"})]},
            {GPU: 1, c.TPU_RESOURCE_NAME: 4},
        ),
        id="two-kinds-two-containers",
    ),
    pytest.param(
        PodCase(
            {
                "initContainers": [container(limits={accelerators.AMD_GPU: "8"})],
                "containers": [container(limits={accelerators.AMD_GPU: "2"})],
            },
            {accelerators.AMD_GPU: 8},
        ),
        id="init-container-peak",
    ),
    pytest.param(PodCase({"containers": [container(requests={"cpu": "4"})]}, {}), id="no-accelerators"),
]


@pytest.mark.parametrize("case", POD_CASES)
def test_pod_accelerators(case: PodCase) -> None:
    assert accelerators.pod_accelerators(case.spec) == case.want


def test_pod_case_count() -> None:
    assert len(POD_CASES) == 5


def test_group_accelerators_without_leader_template_uses_the_worker_for_every_pod() -> None:
    lws = gpu_lws().no_leader_template().size(4).obj()
    assert accelerators.group_accelerators(lws) == {GPU: 4}


def node(name: str, gpus: str, *, unschedulable: bool = False, labels: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {"allocatable": {GPU: gpus, "cpu": "8"}},
    }


def bound_pod(node_name: str, gpus: str, phase: str = "Running") -> Obj:
    return {
        "metadata": {"name": f"p-{node_name}-{gpus}-{phase}"},
        "spec": {"nodeName": node_name, "containers": [container(limits={GPU: gpus})]},
        "status": {"phase": phase},
    }


def test_free_accelerators_sums_schedulable_matching_nodes_minus_bound_pods() -> None:
    nodes = [
        node("a", "8", labels={"pool": "gpu"}),
        node("b", "8", labels={"pool": "gpu"}, unschedulable=True),
        node("c", "8", labels={"pool": "cpu"}),
    ]
    pods = [
        bound_pod("a", "3"),
        bound_pod("a", "4", phase="Succeeded"),
        bound_pod("b", "1"),
        bound_pod("c", "2"),
    ]
    assert accelerators.free_accelerators(nodes, pods, {"pool": "gpu"}) == {GPU: 5}
    assert accelerators.free_accelerators(nodes, pods, {}) == {GPU: 11}
    by_node = accelerators.free_accelerators_by_node(nodes, pods, {})
    assert by_node == {"a": {GPU: 5}, "c": {GPU: 6}}


FIT_CASES = [
    pytest.param({"a": {GPU: 8}}, [{GPU: 8}], True, id="one pod of 8 on a free node"),
    pytest.param({"a": {GPU: 4}, "b": {GPU: 4}}, [{GPU: 8}], False, id="8 free in total, spread 4 + 4"),
    pytest.param({"a": {GPU: 4}, "b": {GPU: 4}}, [{GPU: 4}, {GPU: 4}], True, id="two pods of 4"),
    pytest.param({"a": {GPU: 8}}, [{GPU: 4}, {GPU: 4}, {GPU: 4}], False, id="three pods of 4 on one node"),
    pytest.param(
        {"a": {GPU: 6}, "b": {GPU: 2}}, [{GPU: 2}, {GPU: 6}], True, id="largest first, least left over"
    ),
    pytest.param({}, [{}, {}], True, id="pods without accelerators"),
    pytest.param({}, [{GPU: 1}], False, id="no eligible node"),
]


@pytest.mark.parametrize(("by_node", "pods", "want"), FIT_CASES)
def test_a_group_fits_when_each_pod_finds_one_node(
    by_node: dict[str, dict[str, int]], pods: list[dict[str, int]], want: bool
) -> None:
    assert accelerators.group_fits(by_node, pods) is want


def test_every_fit_case_ran() -> None:
    assert len(FIT_CASES) == 7


@dataclass(frozen=True)
class WarningCase:
    free: dict[str, int] | None
    want_warnings: int


WARNING_CASES = [
    pytest.param(WarningCase({GPU: 2}, 0), id="surge-fits-exactly"),
    pytest.param(WarningCase({GPU: 1}, 1), id="one-gpu-short"),
    pytest.param(WarningCase({}, 1), id="no-gpu-nodes"),
    pytest.param(WarningCase(None, 0), id="free-unknown"),
]


@pytest.mark.parametrize("case", WARNING_CASES)
def test_surge_warning(case: WarningCase) -> None:
    result = lws_plan(gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj(), free=case.free)
    assert len(result.warnings) == case.want_warnings
    assert all(GPU in warning for warning in result.warnings)


def test_warning_case_count() -> None:
    assert len(WARNING_CASES) == 4


# --- time to ready --------------------------------------------------------------------------------------


def group_pod(group: str, worker: int, created: str, ready_at: str | None) -> Obj:
    conditions = (
        [] if ready_at is None else [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}]
    )
    return {
        "metadata": {
            "name": f"plan-{group}-{worker}",
            "creationTimestamp": created,
            "labels": {c.LABEL_SET_NAME: "plan", c.LABEL_GROUP_INDEX: group},
        },
        "status": {"conditions": conditions},
    }


def test_time_to_ready_is_the_median_over_ready_groups() -> None:
    pods = [
        group_pod("0", 0, "2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z"),
        group_pod("0", 1, "2026-01-01T00:00:02Z", "2026-01-01T00:00:20Z"),  # group 0: 20 s
        group_pod("1", 0, "2026-01-01T00:00:00Z", "2026-01-01T00:00:30Z"),  # group 1: 30 s
        group_pod("2", 0, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"),  # group 2: 60 s
        group_pod("3", 0, "2026-01-01T00:00:00Z", None),  # not ready: ignored
    ]
    assert readiness.observed_time_to_ready(pods) == 30.0
    assert readiness.observed_time_to_ready(pods[-1:]) is None


def test_eta_adds_the_time_to_ready_of_every_step_that_waits() -> None:
    result = lws_plan(gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj(), time_to_ready=10.0)
    # Five steps wait for new groups; releasing the surge does not.
    assert [s.eta_seconds for s in result.steps] == [10.0, 20.0, 30.0, 40.0, 50.0, 50.0]
    assert result.eta_seconds == 50.0
    unknown = lws_plan(gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj())
    assert unknown.eta_seconds is None


# --- DisaggregatedSet ----------------------------------------------------------------------------------


def gpu_role(name: str, replicas: int, gpus: int, image: str = "registry.example/old:1") -> Obj:
    spec = {
        "containers": [{"name": "c", "image": image, "resources": {"limits": {GPU: str(gpus)}}}],
    }
    return ds_role(name, replicas, leaderWorkerTemplate={"size": 1, "workerTemplate": {"spec": spec}})


def ds_children(live: Obj) -> list[ChildView]:
    revision = disaggregated_revision(live["spec"]["roles"])
    return [
        ChildView(
            name=f"{live['metadata']['name']}-0-{revision}-{role['name']}",
            role=role["name"],
            revision=revision,
            spec_replicas=role["spec"]["replicas"],
            status_replicas=role["spec"]["replicas"],
            ready_replicas=role["spec"]["replicas"],
            initial_replicas=role["spec"]["replicas"],
            created="2026-01-01T00:00:00Z",
        )
        for role in live["spec"]["roles"]
    ]


def ds_plan(live: Obj, new: Obj, slices: int = 1, **kwargs: Any) -> plan.Plan:
    targets = {role["name"]: role["spec"]["replicas"] for role in new["spec"]["roles"]}
    return plan.plan_disaggregatedset(
        live,
        new,
        children=ds_children(live),
        targets=targets,
        role_targets=role_targets(new, targets),
        slices=slices,
        **kwargs,
    )


LIVE_DS = ds("pd", gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2))


def test_ds_two_roles_roll_without_losing_capacity() -> None:
    new = ds("pd", gpu_role("prefill", 2, 1, NEW_IMAGE), gpu_role("decode", 4, 2, NEW_IMAGE))
    result = ds_plan(LIVE_DS, new, time_to_ready=30.0)
    assert result.change == "rollout"
    # Default maxSurge 1 / maxUnavailable 0 per role: never below 100% of either role.
    assert all(pct >= 100 for step in result.steps for _, pct in step.capacity)
    assert [role for role, _ in result.steps[0].capacity] == ["prefill", "decode"]
    # The first step surges one replica of each role: 1 + 2 GPUs, the peak.
    assert result.steps[0].up == ("prefill +1", "decode +1")
    assert result.peak_extra_accelerators == {GPU: 3}
    # Every new replica came up and every old one went down, once.
    assert sum(int(u.rsplit("+", 1)[1]) for s in result.steps for u in s.up) == 6
    assert sum(int(d.rsplit("-", 1)[1]) for s in result.steps for d in s.down) == 6
    assert (result.steps[-1].updated, result.steps[-1].old) == (6, 0)
    assert result.eta_seconds == 30.0 * sum(1 for s in result.steps if s.up)


def test_ds_slices_multiply_accelerators() -> None:
    new = ds("pd", gpu_role("prefill", 2, 1, NEW_IMAGE), gpu_role("decode", 4, 2, NEW_IMAGE))
    one, two = ds_plan(LIVE_DS, new), ds_plan(LIVE_DS, new, slices=2)
    assert two.peak_extra_accelerators == {GPU: 2 * one.peak_extra_accelerators[GPU]}
    assert [s.up for s in two.steps] == [s.up for s in one.steps]


def test_ds_surge_warning_against_free_gpus() -> None:
    new = ds("pd", gpu_role("prefill", 2, 1, NEW_IMAGE), gpu_role("decode", 4, 2, NEW_IMAGE))
    assert ds_plan(LIVE_DS, new, free={GPU: 3}).warnings == ()
    assert len(ds_plan(LIVE_DS, new, free={GPU: 2}).warnings) == 1


@dataclass(frozen=True)
class DsChangeCase:
    new: Obj
    want_change: str


def with_role_field(key: str, value: Any) -> Obj:
    new = ds("pd", gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2))
    new["spec"]["roles"][0]["spec"][key] = value
    return new


DS_CHANGE_CASES = [
    pytest.param(
        DsChangeCase(ds("pd", gpu_role("prefill", 3, 1), gpu_role("decode", 4, 2)), "scale only"),
        id="replicas",
    ),
    pytest.param(
        DsChangeCase(with_role_field("startupPolicy", c.STARTUP_POLICY_LEADER_READY), "no rollout"),
        id="startupPolicy",
    ),
    pytest.param(
        DsChangeCase(
            with_role_field("rolloutStrategy", {"rollingUpdateConfiguration": {"maxSurge": 2}}), "no rollout"
        ),
        id="rolloutStrategy",
    ),
    pytest.param(
        DsChangeCase(ds("pd", gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2)), "no change"), id="same"
    ),
    pytest.param(
        DsChangeCase(ds("pd", gpu_role("prefill", 2, 1), gpu_role("decode", 4, 3)), "rollout"), id="template"
    ),
]


@pytest.mark.parametrize("case", DS_CHANGE_CASES)
def test_ds_change_kind_follows_the_ds_revision(case: DsChangeCase) -> None:
    result = ds_plan(LIVE_DS, case.new)
    assert result.change == case.want_change
    assert bool(result.steps) == (case.want_change == "rollout")


def test_ds_change_case_count() -> None:
    assert len(DS_CHANGE_CASES) == 5


# --- a live set already mid-rollout ------------------------------------------------------------------


def revision_of(lws: Obj) -> Obj:
    return plan_revision(lws, None, [], RevisionMatchCache()).revision


def key_of(revision: Obj) -> str:
    return str(revision["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH])


def mid_rollout(new: Obj) -> plan.Plan:
    """Live: the template moved from A to B; groups 0-2 are still on A, 3 and the surge 4 on B,
    all ready; the leader StatefulSet is at replicas 5, partition 3."""
    live_a, live_b = gpu_lws().obj(), gpu_lws().worker_image(NEW_IMAGE).obj()
    rev_a, rev_b = revision_of(live_a), revision_of(live_b)
    sts = leader_sts("plan", replicas=5, partition=3, replicas_annotation="4")
    sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = key_of(rev_b)
    pods = [leader_pod("plan", i, key_of(rev_a if i < 3 else rev_b)) for i in range(5)]
    return plan.plan_leaderworkerset(
        live_b,
        new,
        leader_statefulset=sts,
        revisions=[rev_a, rev_b],
        leader_pods=pods,
        statefulsets=[worker_statefulset(pod) for pod in pods],
    )


def test_a_rollout_under_way_shows_its_remaining_steps() -> None:
    result = mid_rollout(gpu_lws().worker_image(NEW_IMAGE).obj())
    assert result.change == "rollout"
    assert "under way" in result.summary
    assert [(s.updated, s.old) for s in result.steps] == [(3, 2), (4, 1), (5, 0), (4, 0)]
    assert [s.down for s in result.steps] == [("2",), ("1",), ("0",), ("4",)]


def test_a_new_template_mid_rollout_outdates_every_group_and_starts_at_the_top() -> None:
    result = mid_rollout(gpu_lws().worker_image("registry.example/newer:3").obj())
    assert result.change == "rollout"
    assert "under way" not in result.summary
    # The surge group already exists, so the first step replaces it rather than adding one.
    assert result.steps[0].down == ("4",)
    assert result.steps[0].up == ("4",)
    assert [(s.updated, s.old) for s in result.steps] == [(1, 4), (2, 3), (3, 2), (4, 1), (5, 0), (4, 0)]


def test_a_steady_live_set_read_from_its_pods_plans_like_the_default() -> None:
    live = gpu_lws().obj()
    sts, revisions = live_state(live)
    sts["metadata"]["annotations"] = {c.ANNOTATION_REPLICAS: "4"}
    pods = [leader_pod("plan", i, key_of(revisions[0])) for i in range(4)]

    def from_pods(new: Obj) -> plan.Plan:
        workers = [worker_statefulset(pod) for pod in pods]
        return plan.plan_leaderworkerset(
            live, new, leader_statefulset=sts, revisions=revisions, leader_pods=pods, statefulsets=workers
        )

    new = gpu_lws().worker_image(NEW_IMAGE).obj()
    assert from_pods(new).steps == lws_plan(live, new).steps
    assert from_pods(live).change == "no change"


# --- the surge's path (surge-fallback-seconds) --------------------------------------------------------

SURGE_KEY = "leaderworkerset.dev/surge-fallback-seconds"
SINCE_KEY = "leaderworkerset.dev/surge-fallback-since"


@dataclass(frozen=True)
class PathCase:
    id: str
    free_by_node: dict[str, dict[str, int]]
    annotations: dict[str, str]
    want_path: str  # the start of the path note, or "" for none
    want_warning: str  # the start of the path warning, or ""
    want_states: tuple[tuple[int, int], ...]
    live_annotations: dict[str, str] = field(default_factory=dict)


PATH_CASES = [
    PathCase(
        "fits",
        {"a": {GPU: 2}},
        {},
        "surge path: the 1 surge group(s) fit",
        "",
        ((1, 4), (2, 3), (3, 2), (4, 1), (5, 0), (4, 0)),
    ),
    PathCase(
        "does not fit, no annotation: the rollout waits",
        {"a": {GPU: 1}},
        {},
        "",
        "the 1 surge group(s) do not fit",
        ((1, 4), (2, 3), (3, 2), (4, 1), (5, 0), (4, 0)),
    ),
    PathCase(
        "does not fit, annotated: without surge, one at a time",
        {"a": {GPU: 0}},
        {SURGE_KEY: "30"},
        "in-place path: the 1 surge group(s) do not fit",
        "",
        ((1, 3), (2, 2), (3, 1), (4, 0)),
    ),
    PathCase(
        "already given back: without surge whatever the nodes say",
        {"a": {GPU: 8}},
        {SURGE_KEY: "30"},
        "surge path: given back since 2026-12-01T12:00:00+00:00",
        "",
        ((1, 3), (2, 2), (3, 1), (4, 0)),
        live_annotations={SINCE_KEY: "2026-12-01T12:00:00Z"},
    ),
]


@pytest.mark.parametrize("case", PATH_CASES, ids=[case.id for case in PATH_CASES])
def test_the_plan_says_which_path_the_surge_takes(case: PathCase) -> None:
    live = gpu_lws().annotations({**case.annotations, **case.live_annotations}).obj()
    new = gpu_lws().annotations({**case.annotations, **case.live_annotations}).worker_image(NEW_IMAGE).obj()
    free = accelerators.total_free(case.free_by_node)
    result = lws_plan(live, new, free=free, free_by_node=case.free_by_node)
    notes = [note for note in result.notes if note.startswith(("surge path", "in-place path"))]
    assert [n[: len(case.want_path)] for n in notes] == ([case.want_path] if case.want_path else [])
    path_warnings = [w for w in result.warnings if "surge group(s)" in w]
    assert [w[: len(case.want_warning)] for w in path_warnings] == (
        [case.want_warning] if case.want_warning else []
    )
    assert tuple((step.updated, step.old) for step in result.steps) == case.want_states


def test_every_path_case_ran() -> None:
    assert len(PATH_CASES) == 4


DS_PATH_CASES = [
    pytest.param({}, {"a": {GPU: 8}}, "surge path: role prefill: the 1 surge group(s) fit", 100, id="fits"),
    pytest.param(
        {SURGE_KEY: "30"}, {"a": {GPU: 0}}, "in-place path: role prefill: the 1", 50, id="without surge"
    ),
]


@pytest.mark.parametrize(("annotations", "free_by_node", "want_note", "want_lowest"), DS_PATH_CASES)
def test_a_disaggregatedset_plan_says_which_path_its_roles_take(
    annotations: dict[str, str], free_by_node: dict[str, dict[str, int]], want_note: str, want_lowest: int
) -> None:
    new = ds("pd", gpu_role("prefill", 2, 1, NEW_IMAGE), gpu_role("decode", 4, 2, NEW_IMAGE))
    new["metadata"]["annotations"] = annotations
    result = ds_plan(LIVE_DS, new, free_by_node=free_by_node)
    assert result.notes[0].startswith(want_note), result.notes
    # In place, each role goes down by one replica at a time: prefill's 2 replicas to 1 (50 %).
    assert (
        min(pct for step in result.steps for role, pct in step.capacity if role == "prefill") == want_lowest
    )
    assert (result.steps[-1].updated, result.steps[-1].old) == (6, 0)


def test_every_ds_path_case_ran() -> None:
    assert len(DS_PATH_CASES) == 2
