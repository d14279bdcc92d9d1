"""In-place updates of groups, pure (core/rollout/inplaceupdate/): the annotation's rule, the pod
patch, the restart allowance, when a pod has settled, and which groups move each round."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle.restart import restart_triggered
from leaderworkerset.core.rollout.inplaceupdate import patches, planning
from leaderworkerset.core.rollout.inplaceupdate.classification import (
    Change,
    Classification,
    UpdatePath,
    for_group,
    node_resizes,
    updated_in_place_message,
)
from leaderworkerset.core.setannotations import annotation_errors, invalid_message
from tests.support.builders import LeaderWorkerSetBuilder

Obj = dict[str, Any]

OLD = {
    "metadata": {"labels": {"team": "a", "tier": "x"}, "annotations": {"note": "1"}},
    "spec": {"containers": [{"name": "main", "image": "vllm:1"}, {"name": "side", "image": "proxy:1"}]},
}
NEW = {
    "metadata": {"labels": {"team": "b"}, "annotations": {"note": "1"}},
    "spec": {
        "containers": [{"name": "main", "image": "vllm:2"}, {"name": "side", "image": "proxy:1"}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    },
}
REVISION = {c.LABEL_TEMPLATE_REVISION_HASH: "new", planning.CONTROLLER_REVISION_HASH: "sts-2"}


def pod(image: str = "vllm:1", *, restarts: int = 0, reported: str | None = None, ready: bool = True) -> Obj:
    return {
        "metadata": {
            "name": "lws-0",
            "labels": {"team": "a", "tier": "x", c.LABEL_TEMPLATE_REVISION_HASH: "old"},
            "annotations": {"note": "1"},
        },
        "spec": {"containers": [{"name": "main", "image": image}, {"name": "side", "image": "proxy:1"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": "main",
                    "image": reported or image,
                    "restartCount": restarts,
                    "state": {"running": {}},
                    "resources": {},
                },
                {"name": "side", "image": "docker.io/library/proxy:1", "restartCount": 0},
            ],
        },
    }


@pytest.mark.parametrize(
    ("value", "hash_identity", "problem"),
    [
        (ext.UPDATE_STRATEGY_IN_PLACE, False, None),
        (ext.UPDATE_STRATEGY_RECREATE, False, None),
        (ext.UPDATE_STRATEGY_RECREATE, True, None),
        ("inplace", False, "must be one of InPlaceIfPossible, Recreate"),
        (ext.UPDATE_STRATEGY_IN_PLACE, True, "in-place updates need groupIdentity Ordinal"),
    ],
)
def test_the_annotation_rule(value: str, hash_identity: bool, problem: str | None) -> None:
    builder = LeaderWorkerSetBuilder()
    if hash_identity:
        builder.spec["groupIdentity"] = c.GROUP_IDENTITY_HASH
    found = planning.update_strategy_problem(value, builder.obj())
    assert (found if found is None else found.split(" (")[0]) == problem


def test_the_pod_patch_carries_the_images_metadata_tolerations_and_revision_labels() -> None:
    delta = patches.template_delta(OLD, NEW)
    patch = patches.pod_patch(pod(restarts=2), delta, REVISION)
    assert patch == {
        "metadata": {
            "labels": {"team": "b", "tier": None, **REVISION},
            # a container restarts: no restart is a failure until the group settles; the pod is on
            # its new image once `main` restarted past its 2 restarts of now
            "annotations": {
                ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "pending",
                ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS: '{"main":2}',
            },
        },
        "spec": {
            "containers": [{"name": "main", "image": "vllm:2"}],
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }


def test_a_pod_already_patched_needs_nothing() -> None:
    delta = patches.template_delta(OLD, NEW)
    patched = pod("vllm:2")
    patched["metadata"]["labels"] = {"team": "b", **REVISION}
    patched["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    assert patches.pod_patch(patched, delta, REVISION) is None


# What the API server appends to every pod it creates or updates (DefaultTolerationSeconds).
SERVER_DEFAULTS = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def test_a_pod_holding_the_new_tolerations_among_the_api_servers_needs_no_patch() -> None:
    delta = patches.template_delta(OLD, NEW)
    patched = pod("vllm:2")
    patched["metadata"]["labels"] = {"team": "b", **REVISION}
    # the server's own first, and the template's stored without its empty `effect`
    patched["spec"]["tolerations"] = [*SERVER_DEFAULTS, {"key": "gpu", "operator": "Exists"}]
    with_empty_effect = {
        **NEW,
        "spec": {**NEW["spec"], "tolerations": [{"key": "gpu", "operator": "Exists", "effect": ""}]},
    }
    assert patches.pod_patch(patched, delta, REVISION) is None
    assert patches.pod_patch(patched, patches.template_delta(OLD, with_empty_effect), REVISION) is None


def test_the_tolerations_patch_keeps_every_toleration_the_pod_has() -> None:
    delta = patches.template_delta(OLD, NEW)
    running = pod("vllm:2")
    running["metadata"]["labels"] = {"team": "b", **REVISION}
    running["spec"]["tolerations"] = list(SERVER_DEFAULTS)
    assert patches.pod_patch(running, delta, REVISION) == {
        "metadata": {},
        "spec": {"tolerations": [*SERVER_DEFAULTS, {"key": "gpu", "operator": "Exists"}]},
    }


def test_the_worker_template_gets_the_same_delta_as_a_patch_naming_only_the_changes() -> None:
    revision = {c.LABEL_TEMPLATE_REVISION_HASH: "new"}
    assert patches.template_patch(OLD, patches.template_delta(OLD, NEW), revision) == {
        "metadata": {"labels": {"team": "b", "tier": None, **revision}},
        "spec": {
            "containers": [{"name": "main", "image": "vllm:2"}],  # merged by name: `side` stays
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }
    assert patches.template_patch(OLD, patches.template_delta(OLD, OLD), {}) == {}


@pytest.mark.parametrize(
    ("restarts", "allowance", "triggered"),
    [
        (0, None, False),
        (1, None, True),
        (1, "1", False),
        (2, "1", True),
        (1, "bad", True),
        (5, "pending", False),
    ],
)
def test_restarts_an_in_place_update_accounts_for_recreate_no_group(
    restarts: int, allowance: str | None, triggered: bool
) -> None:
    lws = LeaderWorkerSetBuilder().obj()  # RecreateGroupOnPodRestart
    restarted = pod(restarts=restarts)
    if allowance is not None:
        restarted["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = allowance
    assert restart_triggered(lws, restarted) is triggered


@pytest.mark.parametrize(
    ("case", "settled"),
    [
        (pod("vllm:2"), True),
        (pod("vllm:2", reported="docker.io/library/vllm:2"), True),  # as containerd reports it
        (pod("vllm:2", reported="vllm:1"), False),  # the old container still runs
        (pod("vllm:2", ready=False), False),
    ],
)
def test_a_pod_settles_once_its_containers_run_the_new_images_and_it_is_ready(
    case: Obj, settled: bool
) -> None:
    assert patches.pod_settled(case) is settled


def updated(restarts: int, before: str, *, running: bool = True) -> Obj:
    """A pod updated to `vllm:2`, a second name of the content of `vllm:1`: the kubelet reports the
    old name for the new container, whose restart count alone tells it started again."""
    updated_pod = pod("vllm:2", restarts=restarts, reported="vllm:1")
    updated_pod["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS] = before
    if not running:
        updated_pod["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    return updated_pod


SETTLED_BY_RESTARTS = [
    (updated(1, '{"main":0}'), True),  # restarted since the update, whatever name it reports
    (updated(0, '{"main":0}'), False),  # the old container still runs
    (updated(1, '{"main":0}', running=False), False),  # its new container not running yet
    (updated(0, '{"main":-1}'), True),  # it had never run: its first start is on the new image
    (updated(3, "not json"), False),  # unreadable: the reported name decides (the old one)
]


@pytest.mark.parametrize(("case", "settled"), SETTLED_BY_RESTARTS)
def test_a_container_whose_image_changed_settles_once_it_started_again(case: Obj, settled: bool) -> None:
    assert patches.pod_settled(case) is settled


def test_the_update_records_each_changed_container_as_it_was() -> None:
    never_ran = pod()
    never_ran["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ErrImagePull"}}
    crashed = pod(restarts=4)
    crashed["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    crashed["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"exitCode": 1}}
    records = [patches.restarts_before_update(p, ["main"]) for p in (pod(restarts=2), never_ran, crashed)]
    assert records == [{"main": 2}, {"main": -1}, {"main": 4}]


IN_PLACE = Classification((Change(UpdatePath.POD_UPDATE, "workerTemplate.spec.containers[main].image", "x"),))
RECREATE = Classification((Change(UpdatePath.RECREATE, "workerTemplate.spec.containers[main].env", "y"),))


def group(index: int, progress: planning.GroupProgress, available: bool = True) -> planning.GroupInPlace:
    return planning.GroupInPlace(index, progress, available, IN_PLACE)


P, S, D, R = (
    planning.GroupProgress.PENDING,
    planning.GroupProgress.STARTED,
    planning.GroupProgress.DONE,
    planning.GroupProgress.RECREATE,
)
PLANS = [
    # (groups, maxUnavailable, halted) -> (hold, advance)
    ([group(0, P), group(1, P), group(2, P)], 1, False, True, (2,)),
    ([group(0, P), group(1, P), group(2, P)], 2, False, True, (2, 1)),
    ([group(0, P), group(1, P), group(2, P)], 0, False, True, (2,)),  # never fewer than one
    ([group(0, P), group(1, P), group(2, D, available=False)], 1, False, True, ()),  # 2 still restarting
    ([group(0, P), group(1, P), group(2, D)], 1, False, True, (1,)),
    ([group(0, P), group(1, S), group(2, D)], 1, False, True, (1,)),  # a started group finishes
    ([group(0, P), group(1, S), group(2, D)], 1, True, True, (1,)),  # ... even when halted
    ([group(0, P), group(1, P)], 1, True, True, ()),
    ([group(0, P, available=False), group(1, P)], 1, False, True, ()),  # one down already
    ([group(0, D), group(1, D)], 1, False, False, ()),
    ([group(0, D), group(1, R)], 1, False, False, ()),  # left to the normal rollout
]


@pytest.mark.parametrize(("groups", "max_unavailable", "halted", "hold", "advance"), PLANS)
def test_which_groups_move(
    groups: list[planning.GroupInPlace],
    max_unavailable: int,
    halted: bool,
    hold: bool,
    advance: tuple[int, ...],
) -> None:
    plan = planning.plan_groups(groups, max_unavailable=max_unavailable, halted=halted, leaders_counted=True)
    assert (plan.hold, plan.advance) == (hold, advance)


def test_every_plan_case_ran() -> None:
    assert len(PLANS) == 11


def test_the_partition_is_kept_until_the_statefulset_controller_counts_the_leaders() -> None:
    done = [group(0, D), group(1, D)]
    plan = planning.plan_groups(done, max_unavailable=1, halted=False, leaders_counted=False)
    assert (plan.hold, plan.keep, plan.advance) == (False, True, ())
    plan = planning.plan_groups(done, max_unavailable=1, halted=False, leaders_counted=True)
    assert (plan.hold, plan.keep, plan.advance) == (False, False, ())


def _sts(update_revision: str, updated: int) -> dict[str, Any]:
    return {"status": {"updateRevision": update_revision, "updatedReplicas": updated}}


def _labelled(revision: str) -> dict[str, Any]:
    return {"metadata": {"labels": {planning.CONTROLLER_REVISION_HASH: revision}}}


COUNTED = [
    # (updatedReplicas, the pods' controller-revision-hash labels) -> counted
    (0, [], True),
    (2, ["sts-new", "sts-new"], True),
    (1, ["sts-new", "sts-new"], False),  # one label not seen by the StatefulSet controller yet
    (0, ["sts-old", "sts-old"], True),  # nothing labelled at the update revision
    (3, ["sts-new", "sts-old"], True),  # it counts pods we do not see (a surge, a new pod)
]


@pytest.mark.parametrize(("updated", "labels", "counted"), COUNTED)
def test_a_partition_waits_for_the_statefulset_controller_to_count_our_labels(
    updated: int, labels: list[str], counted: bool
) -> None:
    sts = _sts("sts-new", updated)
    pods = [_labelled(label) for label in labels]
    assert (
        planning.statefulset_counts_labelled(sts, planning.labelled_at_update_revision(sts, pods)) is counted
    )


def test_every_counted_case_ran() -> None:
    assert len(COUNTED) == 5


def test_group_progress_reads_the_revision_labels() -> None:
    leader, worker = pod(), pod()
    assert planning.group_progress(leader, [worker], None, "new", IN_PLACE) is P
    assert planning.group_progress(leader, [worker], None, "new", RECREATE) is R
    assert planning.group_progress(leader, [worker], None, "new", None) is R
    worker["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = "new"
    assert planning.group_progress(leader, [worker], None, "new", IN_PLACE) is S
    leader["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] = "new"
    assert planning.group_progress(leader, [worker], None, "new", IN_PLACE) is D


def test_the_event_names_the_path_and_every_change() -> None:
    both = Classification(
        (*IN_PLACE.changes, Change(UpdatePath.METADATA, "workerTemplate.metadata.labels", "z"))
    )
    assert updated_in_place_message(3, both) == (
        "group 3 updated in place (metadata, pod update): "
        "workerTemplate.spec.containers[main].image: x; workerTemplate.metadata.labels: z"
    )


def test_with_the_webhooks_off_a_bad_value_is_flagged_in_its_condition_and_ignored() -> None:
    bad = LeaderWorkerSetBuilder().annotation(ext.ANNOTATION_UPDATE_STRATEGY, "Sometimes").obj()
    [(rule, error)] = annotation_errors(bad, c.LWS_KIND)
    assert (rule.condition, rule.event_reason) == (
        ext.CONDITION_UPDATE_STRATEGY_INVALID,
        ext.EVENT_INVALID_UPDATE_STRATEGY,
    )
    assert invalid_message(rule, error) == (
        f"annotation {ext.ANNOTATION_UPDATE_STRATEGY}: 'Sometimes' is invalid: must be one of "
        "InPlaceIfPossible, Recreate; every template change recreates groups (as upstream)"
    )
    assert not planning.wants_in_place_update(bad)


@pytest.mark.parametrize(
    ("new_image", "knock_on", "allowance"),
    [("vllm:2", 1, "pending"), ("vllm:2", 0, "pending"), ("vllm:1", 1, "pending"), ("vllm:1", 0, None)],
)
def test_a_pod_whose_containers_or_leader_restart_is_pending_until_its_group_settles(
    new_image: str, knock_on: int, allowance: str | None
) -> None:
    new = {
        **NEW,
        "spec": {"containers": [{"name": "main", "image": new_image}, {"name": "side", "image": "proxy:1"}]},
    }
    patch = patches.pod_patch(pod(), patches.template_delta(OLD, new), REVISION, knock_on=knock_on)
    assert patch is not None
    assert patch["metadata"].get("annotations", {}).get(ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS) == allowance
    assert patches.restarts_containers(patches.template_delta(OLD, new), pod()) is (new_image != "vllm:1")


def test_new_cpu_and_memory_go_through_the_resize_subresource_and_the_template() -> None:
    old = {
        "spec": {"containers": [{"name": "main", "image": "vllm:1", "resources": {"requests": {"cpu": "1"}}}]}
    }
    new = {
        "spec": {"containers": [{"name": "main", "image": "vllm:1", "resources": {"requests": {"cpu": "2"}}}]}
    }
    delta = patches.template_delta(old, new)
    running = pod()
    running["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    assert patches.resize_patch(running, delta) == {
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]}
    }
    running["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    assert patches.resize_patch(running, delta) is None  # resized already
    assert patches.template_patch(old, delta, {}) == {
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]}
    }


def test_a_resource_the_new_template_drops_is_removed_from_the_worker_template() -> None:
    main = {"name": "main", "image": "vllm:1"}
    old = {"spec": {"containers": [{**main, "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    new = {"spec": {"containers": [{**main, "resources": {"limits": {"cpu": "2"}}}]}}
    assert patches.template_patch(old, patches.template_delta(old, new), {}) == {
        "spec": {"containers": [{"name": "main", "resources": {"requests": None, "limits": {"cpu": "2"}}}]}
    }


def test_a_pod_whose_resize_the_kubelet_has_not_applied_has_not_settled() -> None:
    resizing = pod()
    resizing["status"]["conditions"].append({"type": "PodResizeInProgress", "status": "True"})
    assert not patches.pod_settled(resizing)


RESIZE = Classification((Change(UpdatePath.RESIZE, "workerTemplate.spec.containers[main].resources", "r"),))


@pytest.mark.parametrize(
    ("statuses", "resizes"),
    [
        ([{"state": {"running": {}}, "resources": {}}], True),
        ([{"state": {"running": {}}}], False),  # a kubelet that does not resize reports no resources
        ([{"state": {"waiting": {}}}], True),  # nothing runs: the API server takes it
    ],
)
def test_a_group_resizes_in_place_only_where_every_kubelet_does(statuses: list[Obj], resizes: bool) -> None:
    member = pod()
    member["status"]["containerStatuses"] = statuses
    assert node_resizes(member) is resizes
    assert for_group(RESIZE, [pod(), member]).in_place is resizes
    assert for_group(IN_PLACE, [member]) == IN_PLACE


def test_a_settled_pod_keeps_the_restarts_its_update_caused_and_no_more() -> None:
    settled = pod(restarts=2)
    settled["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = "pending"
    assert patches.settle_patch(settled) == {
        "metadata": {"annotations": {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "2"}}
    }
    settled["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS] = '{"main":1}'
    assert patches.settle_patch(settled) == {  # the containers' record goes with the pending mark
        "metadata": {
            "annotations": {
                ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: "2",
                ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS: None,
            }
        }
    }
    settled["metadata"]["annotations"][ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = "2"
    assert patches.settle_patch(settled) is None
