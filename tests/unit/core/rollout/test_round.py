"""One rolling-update decision of an Ordinal LWS, pure: upstream's step, then pause and deadline."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.rollout import round as rolloutround
from leaderworkerset.core.rollout.control import RolloutControl, rollout_control
from leaderworkerset.core.rollout.partition import plan_rollout_for
from tests.support.builders import cached_lws, leader_pod, leader_sts

Obj = dict[str, Any]
NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _inputs(lws: Obj, *, pods_ready: bool = True, old_revision: bool = True) -> rolloutround.RolloutInputs:
    """4 groups at partition 3, group 3 on the new revision; the others still old."""
    pods = [
        leader_pod("test-sample", i, "new" if i == 3 else "old", ready=pods_ready or i != 3) for i in range(4)
    ]
    for pod in pods:
        pod["metadata"]["creationTimestamp"] = (NOW - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return rolloutround.RolloutInputs(
        lws=lws,
        leader_sts=leader_sts("test-sample", replicas=4, partition=3, replicas_annotation="4"),
        revision=None,
        revision_key="new",
        revision_created=False,
        control=rollout_control(lws),
        under_way=old_revision,
        leader_pods=pods,
        pods=pods,
    )


def _lws(**annotations: str) -> Obj:
    return cached_lws().replicas(4).max_unavailable(1).annotations(annotations).obj()


@pytest.mark.parametrize(
    ("control", "sts", "created", "under_way", "want"),
    [
        pytest.param(RolloutControl(deadline_seconds=60), True, False, True, True, id="deadline under way"),
        pytest.param(RolloutControl(deadline_seconds=60), False, False, True, False, id="no leader sts yet"),
        pytest.param(RolloutControl(deadline_seconds=60), True, True, True, False, id="a new template"),
        pytest.param(RolloutControl(deadline_seconds=60), True, False, False, False, id="no rollout"),
        pytest.param(RolloutControl(paused=True, deadline_seconds=60), True, False, True, False, id="paused"),
        pytest.param(RolloutControl(), True, False, True, False, id="no deadline"),
    ],
)
def test_every_pod_is_read_only_when_the_deadline_is_checked(
    control: RolloutControl, sts: bool, created: bool, under_way: bool, want: bool
) -> None:
    leader = leader_sts("test-sample", replicas=1) if sts else None
    got = rolloutround.reads_pods(control, leader_sts=leader, revision_created=created, under_way=under_way)
    assert got is want


def test_without_rollout_control_the_decision_is_upstreams_step() -> None:
    inputs = _inputs(_lws())
    got = rolloutround.decide_rollout_round(inputs, NOW)
    want = plan_rollout_for(
        inputs.lws,
        inputs.leader_sts,
        revision_key="new",
        revision_created=False,
        leader_pods=inputs.leader_pods,
        statefulsets=inputs.statefulsets,
    )
    assert got == rolloutround.RolloutRound(want)
    assert got.decision.partition == 2  # group 3 is ready on the new revision: the next one goes


def test_a_paused_rollout_is_held_where_the_statefulset_is() -> None:
    got = rolloutround.decide_rollout_round(_inputs(_lws(**{ext.ANNOTATION_ROLLOUT_PAUSED: "true"})), NOW)
    assert (got.decision.partition, got.decision.replicas, got.stall) == (3, 4, None)


def test_within_the_deadline_the_step_goes_on_and_asks_to_look_again_when_it_falls() -> None:
    lws = _lws(**{ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: str(2 * 3600)})
    got = rolloutround.decide_rollout_round(_inputs(lws, pods_ready=False), NOW)
    assert got.stall is None
    assert got.requeue_after == pytest.approx(3600 + 1.0)


def test_past_the_deadline_the_rollout_is_held_and_the_stall_names_the_first_waiting_group() -> None:
    lws = _lws(**{ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "60"})
    got = rolloutround.decide_rollout_round(_inputs(lws, pods_ready=False), NOW)
    assert got.decision.partition == 3
    assert got.stall is not None
    assert (got.stall.ordinal, got.stall.waiting, got.stall.seconds) == (3, 1, 60)


@pytest.mark.parametrize(
    ("hold", "keep", "want"),
    [
        pytest.param(False, False, (2, 4), id="no in-place update: upstream's step"),
        pytest.param(True, False, (4, 4), id="groups wait in place: held at the replicas"),
        pytest.param(False, True, (3, 4), id="leaders not counted yet: not lowered"),
        pytest.param(True, True, (4, 4), id="held wins"),
    ],
)
def test_an_in_place_update_holds_or_keeps_the_partition_as_its_plan_says(
    hold: bool, keep: bool, want: tuple[int, int]
) -> None:
    inputs = replace(_inputs(_lws()), in_place_hold=hold, in_place_keep=keep)
    got = rolloutround.decide_rollout_round(inputs, NOW)
    assert (got.decision.partition, got.decision.replicas) == want
    if hold:
        assert got.decision.events == ()  # the step's partition move does not happen


def test_keeping_the_partition_never_raises_it() -> None:
    step = rolloutround.decide_rollout_round(_inputs(_lws()), NOW).decision
    raised = replace(step, partition=4)
    inputs = replace(_inputs(_lws()), in_place_keep=True)
    assert rolloutround.in_place_partition(raised, inputs) == raised


def test_the_rollout_is_under_way_while_a_revision_of_another_template_remains() -> None:
    lws = cached_lws().obj()
    revisions = [_revision(lws, "old"), _revision(lws, "new")]
    assert rolloutround.rollout_under_way(lws, revisions, "new")
    assert not rolloutround.rollout_under_way(lws, revisions[1:], "new")


def _revision(lws: Obj, key: str) -> Obj:
    meta = lws["metadata"]
    return {
        "metadata": {
            "name": f"{meta['name']}-{key}",
            "namespace": meta["namespace"],
            "labels": {c.LABEL_SET_NAME: meta["name"], c.LABEL_TEMPLATE_REVISION_HASH: key},
            "ownerReferences": [
                {"kind": "LeaderWorkerSet", "name": meta["name"], "uid": meta["uid"], "controller": True}
            ],
        }
    }
