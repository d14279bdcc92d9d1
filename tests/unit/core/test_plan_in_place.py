"""`lws plan` for a set with `update-strategy: InPlaceIfPossible`: which path the groups take and why,
and the in-place steps (batches of max(maxUnavailable, 1) groups, highest ordinal first, each patched
where it runs)."""

from __future__ import annotations

from leaderworkerset.api import extensions as ext
from tests.support.builders import LeaderWorkerSetBuilder
from tests.unit.core.test_plan import NEW_IMAGE, gpu_lws, lws_plan


def in_place(unavailable: int = 1) -> LeaderWorkerSetBuilder:
    return gpu_lws(surge=0, unavailable=unavailable).annotation(
        ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE
    )


def test_a_new_image_is_planned_in_place_group_by_group() -> None:
    result = lws_plan(in_place(2).obj(), in_place(2).worker_image(NEW_IMAGE).obj())
    assert result.change == "rollout"
    assert result.summary == (
        "in-place update of 4 groups (pod update): max(maxUnavailable, 1) = 2 at a time, no pod recreated"
    )
    assert result.notes == (
        "in-place path (update-strategy InPlaceIfPossible): workerTemplate.spec.containers[worker].image: "
        "the kubelet restarts this container",
    )
    assert [(s.down, s.up) for s in result.steps] == [(("3", "2"),) * 2, (("1", "0"),) * 2]
    assert [(s.updated, s.old, s.capacity) for s in result.steps] == [
        (2, 2, (("groups", 50),)),
        (4, 0, (("groups", 50),)),
    ]
    assert result.peak_extra_accelerators == {}
    assert result.warnings == ()


def test_a_change_that_cannot_go_in_place_is_planned_as_the_normal_rollout_and_says_why() -> None:
    result = lws_plan(in_place().obj(), in_place().worker_requests({"nvidia.com/gpu": "2"}).obj())
    assert result.summary.startswith("rolling update of 4 groups")
    assert result.notes[0] == (
        "recreate path (update-strategy InPlaceIfPossible): "
        "workerTemplate.spec.containers[worker].resources: nvidia.com/gpu cannot be resized in place"
    )
    assert len(result.steps) == 4


def test_without_the_annotation_the_plan_is_upstreams_rollout() -> None:
    result = lws_plan(
        gpu_lws(surge=0, unavailable=1).obj(), gpu_lws(surge=0, unavailable=1).worker_image(NEW_IMAGE).obj()
    )
    assert result.summary.startswith("rolling update of 4 groups")
    assert not any("in-place" in note or "recreate path" in note for note in result.notes)
