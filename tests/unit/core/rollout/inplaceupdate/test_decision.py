"""One round of an in-place update, pure (core/rollout/inplaceupdate/decision.py): a snapshot in, the
whole plan out (hold, keep, settle, advance), and each moved group's writes in order."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.rollout.inplaceupdate import decision, planning
from leaderworkerset.core.rollout.inplaceupdate.classification import classify_template_change
from leaderworkerset.core.rollout.inplaceupdate.decision import Target
from tests.support.builders import LeaderWorkerSetBuilder

Obj = dict[str, Any]
NAME = "test-sample"
OLD, NEW = "old", "new"
NEW_IMAGE = "nginx:2"


def _lws(**annotations: str) -> Obj:
    builder = LeaderWorkerSetBuilder().replicas(2).size(2)
    builder.annotations({ext.ANNOTATION_UPDATE_STRATEGY: ext.UPDATE_STRATEGY_IN_PLACE, **annotations})
    return builder.obj()


def _specs(lws: Obj, change: str = "image") -> tuple[Obj, Obj]:
    old = {"leaderWorkerTemplate": copy.deepcopy(lws["spec"]["leaderWorkerTemplate"])}
    new = copy.deepcopy(old)
    container = new["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    if change == "image":
        container["image"] = NEW_IMAGE
    else:
        container["env"] = [{"name": "A", "value": "1"}]  # needs new pods
    return old, new


def _pod(index: int, worker: int, key: str, spec: Obj, *, ready: bool = True, **annotations: str) -> Obj:
    role = "leaderTemplate" if worker == 0 else "workerTemplate"
    containers = copy.deepcopy(spec["leaderWorkerTemplate"][role]["spec"]["containers"])
    name = f"{NAME}-{index}" if worker == 0 else f"{NAME}-{index}-{worker}"
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {
                c.LABEL_SET_NAME: NAME,
                c.LABEL_GROUP_INDEX: str(index),
                c.LABEL_WORKER_INDEX: str(worker),
                c.LABEL_TEMPLATE_REVISION_HASH: key,
            },
            "annotations": dict(annotations),
        },
        "spec": {"containers": containers},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {"name": ctr["name"], "image": ctr["image"], "restartCount": 0} for ctr in containers
            ],
        },
    }


def _sts(name: str, key: str, *, partition: int = 0, update: str | None = None, updated: int = 0) -> Obj:
    status: Obj = {"observedGeneration": 1, "updatedReplicas": updated}
    if update is not None:
        status["updateRevision"] = update
    labels = {c.LABEL_TEMPLATE_REVISION_HASH: key}
    return {
        "metadata": {"name": name, "namespace": "default", "generation": 1, "labels": labels},
        "spec": {
            "replicas": 1 if name != NAME else 2,
            "template": {"metadata": {"labels": labels}},
            "updateStrategy": {"rollingUpdate": {"partition": partition}},
        },
        "status": status,
    }


def _inputs(
    lws: Obj, pods: list[Obj], statefulsets: list[Obj], change: str = "image"
) -> decision.InPlaceInputs:
    old, new = _specs(lws, change)
    leader_sts = next((s for s in statefulsets if s["metadata"]["name"] == NAME), _sts(NAME, NEW))
    return decision.InPlaceInputs(
        lws=lws,
        revision_key=NEW,
        new_spec=new,
        leader_sts=leader_sts,
        pods={p["metadata"]["name"]: p for p in pods},
        statefulsets={s["metadata"]["name"]: s for s in statefulsets},
        old_specs={OLD: old},
        classifications={OLD: classify_template_change(old, new, resizes_in_place=False)},
    )


def _old_groups(lws: Obj, *, ready: bool = True) -> list[Obj]:
    old, _ = _specs(lws)
    return [_pod(i, w, OLD, old, ready=ready) for i in range(2) for w in range(2)]


def _progress(plan: decision.InPlaceRoundPlan) -> list[tuple[int, planning.GroupProgress, bool]]:
    return [(g.state.index, g.state.progress, g.state.available) for g in plan.groups]


def test_a_round_starts_the_highest_group_within_the_budget_and_holds_the_partition() -> None:
    lws = _lws()
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", OLD)]
    plan = decision.decide_in_place_round(_inputs(lws, _old_groups(lws), sets))
    assert _progress(plan) == [
        (0, planning.GroupProgress.PENDING, True),
        (1, planning.GroupProgress.PENDING, True),
    ]
    assert (plan.hold, plan.keep, plan.advance, plan.settle) == (True, False, (1,), ())
    assert plan.waiting
    assert plan.needs_new_pods is None


def test_a_change_that_needs_new_pods_is_left_to_the_rollout_and_named_once() -> None:
    lws = _lws()
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", OLD)]
    plan = decision.decide_in_place_round(_inputs(lws, _old_groups(lws), sets, change="env"))
    assert [g.state.progress for g in plan.groups] == [planning.GroupProgress.RECREATE] * 2
    assert (plan.hold, plan.advance, plan.waiting) == (False, (), False)
    assert plan.needs_new_pods is not None
    assert (
        "workerTemplate.spec.containers[worker].env"
        in plan.needs_new_pods.reasons(plan.needs_new_pods.path)[0]
    )


def test_a_paused_rollout_starts_no_group_but_still_holds() -> None:
    lws = _lws(**{ext.ANNOTATION_ROLLOUT_PAUSED: "true"})
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", OLD)]
    plan = decision.decide_in_place_round(_inputs(lws, _old_groups(lws), sets))
    assert (plan.hold, plan.advance) == (True, ())


def test_a_group_done_and_settled_is_released_from_the_updates_restart_allowance() -> None:
    lws = _lws()
    old, new = _specs(lws)
    pending = {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "pending"}
    pods = [_pod(0, w, OLD, old) for w in range(2)] + [_pod(1, w, NEW, new, **pending) for w in range(2)]
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", NEW)]
    plan = decision.decide_in_place_round(_inputs(lws, pods, sets))
    assert [(w.target, w.name) for w in plan.settle] == [
        (Target.POD_SETTLE, f"{NAME}-1"),
        (Target.POD_SETTLE, f"{NAME}-1-1"),
    ]
    assert plan.settle[0].patch == {
        "metadata": {"annotations": {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "0"}}
    }
    assert plan.advance == (0,)  # group 1 is available again: the next one starts


def test_a_group_done_but_not_settled_is_not_released_and_counts_unavailable() -> None:
    lws = _lws()
    old, new = _specs(lws)
    pending = {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "pending"}
    restarting = _pod(1, 1, NEW, new, **pending)
    restarting["status"]["containerStatuses"][0]["image"] = "nginx:1"  # still the old container
    pods = [_pod(0, w, OLD, old) for w in range(2)] + [_pod(1, 0, NEW, new, **pending), restarting]
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", NEW)]
    plan = decision.decide_in_place_round(_inputs(lws, pods, sets))
    assert (plan.settle, plan.advance, plan.waiting) == ((), (), True)


def test_until_the_leader_statefulset_counts_the_leaders_the_partition_is_kept() -> None:
    lws = _lws()
    _, new = _specs(lws)
    pods = [_pod(i, w, NEW, new) for i in range(2) for w in range(2)]
    for pod in pods:
        pod["metadata"]["labels"][planning.CONTROLLER_REVISION_HASH] = "leader-new"
    sets = [_sts(NAME, NEW, update="leader-new", updated=1), _sts(f"{NAME}-0", NEW), _sts(f"{NAME}-1", NEW)]
    plan = decision.decide_in_place_round(_inputs(lws, pods, sets))
    assert (plan.hold, plan.keep, plan.advance) == (False, True, ())
    leaders = [p for p in pods if p["metadata"]["name"] in (f"{NAME}-0", f"{NAME}-1")]
    assert not decision.leaders_done(sets[0], leaders, NEW)
    counted = _sts(NAME, NEW, update="leader-new", updated=2)
    assert decision.leaders_done(counted, leaders, NEW)
    assert not decision.leaders_done(counted, leaders, OLD)


def _group_one(worker_sts: Obj, leader_sts: Obj | None) -> decision.GroupWrites:
    """Group 1 of two on the old revision, its worker StatefulSet as given."""
    lws = _lws()
    old, _ = _specs(lws)
    pods = [_pod(i, w, OLD, old) for i in range(2) for w in range(2)]
    inputs = _inputs(lws, pods, [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), worker_sts])
    plan = decision.decide_in_place_round(inputs)
    assert 1 in plan.advance
    return decision.group_writes(inputs, plan, 1, leader_sts)


def test_a_group_first_puts_its_worker_statefulset_on_the_new_template_held() -> None:
    step = _group_one(_sts(f"{NAME}-1", OLD), None)
    assert [(w.target, w.name) for w in step.writes] == [(Target.WORKER_TEMPLATE, f"{NAME}-1")]
    patch = step.writes[0].patch
    assert patch["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == 1
    assert patch["spec"]["template"]["spec"]["containers"] == [{"name": "worker", "image": NEW_IMAGE}]
    assert step.updated is None


def test_then_its_workers_and_once_counted_the_partition_then_the_leader() -> None:
    published = _sts(f"{NAME}-1", NEW, partition=1, update="w-new")
    step = _group_one(published, None)
    assert [(w.target, w.name) for w in step.writes] == [(Target.POD, f"{NAME}-1-1")]
    worker_patch = step.writes[0].patch
    assert worker_patch["spec"]["containers"] == [{"name": "worker", "image": NEW_IMAGE}]
    assert worker_patch["metadata"]["labels"][planning.CONTROLLER_REVISION_HASH] == "w-new"

    counted = _sts(f"{NAME}-1", NEW, partition=1, update="w-new", updated=1)
    step = _group_one(counted, _sts(NAME, NEW))  # the leader StatefulSet has no update revision yet
    assert [w.target for w in step.writes] == [Target.POD, Target.WORKER_PARTITION]
    assert step.updated is None

    leader_sts = _sts(NAME, NEW, update="leader-new")
    step = _group_one(counted, leader_sts)
    assert [(w.target, w.name) for w in step.writes] == [
        (Target.POD, f"{NAME}-1-1"),
        (Target.WORKER_PARTITION, f"{NAME}-1"),
        (Target.POD, f"{NAME}-1"),
    ]
    assert step.writes[-1].patch["metadata"]["labels"] == {
        c.LABEL_TEMPLATE_REVISION_HASH: NEW,
        planning.CONTROLLER_REVISION_HASH: "leader-new",
    }
    assert step.updated is not None
    assert step.updated.startswith("group 1 updated in place (pod update)")


def test_a_worker_already_patched_gets_no_write_again() -> None:
    lws = _lws()
    old, new = _specs(lws)
    worker = _pod(1, 1, NEW, new)
    worker["metadata"]["labels"][planning.CONTROLLER_REVISION_HASH] = "w-new"
    worker["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = "pending"
    pods = [_pod(0, w, OLD, old) for w in range(2)] + [_pod(1, 0, OLD, old), worker]
    published = _sts(f"{NAME}-1", NEW, partition=1, update="w-new")
    inputs = _inputs(lws, pods, [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), published])
    plan = decision.decide_in_place_round(inputs)
    assert plan.advance == (1,)  # started: it always finishes
    assert decision.group_writes(inputs, plan, 1, None).writes == ()


def test_a_group_whose_old_revision_is_unknown_gets_no_write() -> None:
    lws = _lws()
    sets = [_sts(NAME, NEW), _sts(f"{NAME}-0", OLD), _sts(f"{NAME}-1", OLD)]
    inputs = _inputs(lws, _old_groups(lws), sets)
    plan = decision.decide_in_place_round(inputs)
    assert decision.group_writes(replace(inputs, old_specs={}), plan, 1, None).writes == ()


@pytest.mark.parametrize(
    ("hold", "available", "progress", "waiting"),
    [
        (True, True, planning.GroupProgress.PENDING, True),
        (False, True, planning.GroupProgress.DONE, False),
        (False, False, planning.GroupProgress.DONE, True),
        (False, False, planning.GroupProgress.RECREATE, False),
    ],
)
def test_the_set_waits_on_its_pods_while_held_or_a_group_in_place_is_unavailable(
    hold: bool, available: bool, progress: planning.GroupProgress, waiting: bool
) -> None:
    plan = planning.InPlacePlan(hold=hold, advance=())
    groups = [planning.GroupInPlace(0, progress, available, None)]
    assert decision.waits_on_pods(plan, groups) is waiting


def test_a_statefulset_is_published_once_its_controller_observed_it_and_named_the_update_revision() -> None:
    assert decision.statefulset_published(_sts(NAME, NEW, update="r"), NEW)
    assert not decision.statefulset_published(_sts(NAME, NEW), NEW)  # no update revision yet
    assert not decision.statefulset_published(_sts(NAME, OLD, update="r"), NEW)
    stale = _sts(NAME, NEW, update="r")
    stale["metadata"]["generation"] = 2
    assert not decision.statefulset_published(stale, NEW)
