"""Diff-aware in-place updates (`update-strategy: InPlaceIfPossible`) on the full cluster, where
kube-controller-manager's StatefulSet controller decides and kwok plays the kubelet's image swap:

* a new image reaches every pod in place: same pods (UIDs), same nodes, the new image running, every
  StatefulSet reporting its update revision as current, one `GroupUpdatedInPlace` event per group;
* a label added to the worker template is patched onto the running pods;
* an env change cannot go in place, nor a CPU change on nodes that do not resize: the normal
  rollout recreates the groups;
* a manager killed between two groups' updates resumes: every group updated exactly once, none
  recreated, none left half updated.

Without the feature each of the first two would recreate every pod (a StatefulSet rollout).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.rollout.inplaceupdate.planning import CONTROLLER_REVISION_HASH
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, STATEFULSETS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.builders.common import IMAGE
from tests.support.cli import lws_ok
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create, leader_statefulset_revision_key, pods_by_name, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
NAME = "inplace"
NEW_IMAGE = "nginx:2"


def in_place_set(ns: str, replicas: int, size: int) -> LeaderWorkerSetBuilder:
    return (
        LeaderWorkerSetBuilder(ns, NAME)
        .replicas(replicas)
        .size(size)
        .annotation(ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE)
    )


async def placement(api: KubeClient, ns: str) -> dict[str, tuple[str, str]]:
    """Pod name → (UID, node)."""
    pods = await pods_by_name(api, ns, NAME)
    return {name: (pod["metadata"]["uid"], pod["spec"].get("nodeName", "")) for name, pod in pods.items()}


async def in_place_events(api: KubeClient, ns: str) -> list[str]:
    return [
        e["note"] for e in await api.list(EVENTS, ns) if e.get("reason") == ext.EVENT_GROUP_UPDATED_IN_PLACE
    ]


async def expect_statefulsets_updated(api: KubeClient, ns: str, count: int) -> None:
    """Every StatefulSet of the set (leader and workers) has rolled to its update revision and its
    pods carry it: upstream's controller would find no rollout pending."""

    async def check() -> bool:
        stss = await api.list(STATEFULSETS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")
        assert len(stss) == count
        pods = await pods_by_name(api, ns, NAME)
        for sts in stss:
            status = sts["status"]
            assert status.get("currentRevision") == status.get("updateRevision"), sts["metadata"]["name"]
            assert status.get("updatedReplicas") == sts["spec"]["replicas"], sts["metadata"]["name"]
        for pod in pods.values():
            owner = pod["metadata"]["ownerReferences"][0]["name"]
            sts = next(s for s in stss if s["metadata"]["name"] == owner)
            assert pod["metadata"]["labels"][CONTROLLER_REVISION_HASH] == sts["status"]["updateRevision"]
        return True

    await eventually(check, timeout=LONG_TIMEOUT)


async def expect_updated_in_place(api: KubeClient, ns: str, groups: int) -> None:
    async def updated() -> bool:
        assert len(await in_place_events(api, ns)) == groups
        return True

    await eventually(updated, timeout=LONG_TIMEOUT)


async def expect_every_pod_recreated(api: KubeClient, ns: str, before: dict[str, tuple[str, str]]) -> None:
    """The normal rollout: every pod of the set is a new one."""

    async def recreated() -> bool:
        now = await placement(api, ns)
        assert len(now) == len(before)
        assert not {uid for uid, _ in now.values()} & {uid for uid, _ in before.values()}
        return True

    await eventually(recreated, timeout=LONG_TIMEOUT)


async def expect_running_images(api: KubeClient, ns: str, images: dict[str, str]) -> None:
    """Container name → the image its spec asks for and its status reports running."""

    async def check() -> bool:
        for pod in (await pods_by_name(api, ns, NAME)).values():
            statuses = (pod.get("status") or {}).get("containerStatuses")
            assert statuses, f"{pod['metadata']['name']} reports no container (a new pod?)"
            container, status = pod["spec"]["containers"][0], statuses[0]
            assert container["image"] == images[container["name"]], pod["metadata"]["name"]
            assert status["image"] == container["image"], pod["metadata"]["name"]
        return True

    await eventually(check, timeout=LONG_TIMEOUT)


async def test_a_new_image_updates_every_group_in_place(api: KubeClient, ns: str) -> None:
    await create(api, in_place_set(ns, 3, 3).obj())
    await expect_groups_available(api, ns, 3, name=NAME)
    before = await placement(api, ns)
    assert len(before) == 9

    leader_image = "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0/image"
    await api.json_patch(
        LEADERWORKERSETS, ns, NAME, [{"op": "replace", "path": leader_image, "value": NEW_IMAGE}]
    )
    await update_worker_image(api, ns, NEW_IMAGE, name=NAME)

    await expect_updated_in_place(api, ns, 3)
    await expect_groups_available(api, ns, 3, name=NAME)
    await expect_running_images(api, ns, {"leader": NEW_IMAGE, "worker": NEW_IMAGE})
    await expect_statefulsets_updated(api, ns, 4)
    assert await placement(api, ns) == before, "a pod was recreated or moved"
    key = await leader_statefulset_revision_key(api, ns, NAME)
    pods = await pods_by_name(api, ns, NAME)
    assert {p["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] for p in pods.values()} == {key}
    notes = sorted(await in_place_events(api, ns))
    assert notes == [
        f"group {i} updated in place (pod update): "
        "leaderTemplate.spec.containers[leader].image: the kubelet restarts this container; "
        "workerTemplate.spec.containers[worker].image: the kubelet restarts this container"
        for i in range(3)
    ]


async def test_a_label_added_to_the_template_is_patched_onto_the_running_pods(
    api: KubeClient, ns: str
) -> None:
    await create(api, in_place_set(ns, 2, 2).obj())
    await expect_groups_available(api, ns, 2, name=NAME)
    before = await placement(api, ns)
    await api.merge_patch(
        LEADERWORKERSETS,
        ns,
        NAME,
        {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"labels": {"team": "serving"}}}}}},
    )

    async def labelled() -> bool:
        pods = await pods_by_name(api, ns, NAME)
        assert len(pods) == 4
        for pod in pods.values():  # the leaders have their own template
            worker = pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] != "0"
            assert pod["metadata"]["labels"].get("team") == ("serving" if worker else None)
        return True

    await eventually(labelled, timeout=LONG_TIMEOUT)
    await expect_groups_available(api, ns, 2, name=NAME)
    await expect_statefulsets_updated(api, ns, 3)
    assert await placement(api, ns) == before
    assert len(await in_place_events(api, ns)) == 2


async def test_an_env_change_falls_back_to_the_normal_rollout(api: KubeClient, ns: str) -> None:
    await create(api, in_place_set(ns, 2, 2).obj())
    await expect_groups_available(api, ns, 2, name=NAME)
    before = await placement(api, ns)
    env = [{"name": "MODE", "value": "b"}]
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/env"
    await api.json_patch(LEADERWORKERSETS, ns, NAME, [{"op": "add", "path": path, "value": env}])
    await expect_every_pod_recreated(api, ns, before)
    await expect_groups_available(api, ns, 2, name=NAME)
    assert await in_place_events(api, ns) == []
    events = await api.list(EVENTS, ns)
    assert [e["note"] for e in events if e.get("reason") == ext.EVENT_UPDATE_NEEDS_NEW_PODS] == [
        "the change needs new pods, so its groups are recreated as in a rollout: "
        "workerTemplate.spec.containers[worker].env: the API refuses it on a running pod"
    ]


async def test_a_manager_killed_mid_update_resumes_without_updating_a_group_twice(
    api: KubeClient, ns: str, restartable_manager: ManagerProcess
) -> None:
    await create(api, in_place_set(ns, 4, 2).obj())
    await expect_groups_available(api, ns, 4, name=NAME)
    before = await placement(api, ns)
    await update_worker_image(api, ns, NEW_IMAGE, name=NAME)

    async def some_updated() -> bool:
        assert 1 <= len(await in_place_events(api, ns)) < 4
        return True

    await eventually(some_updated, timeout=LONG_TIMEOUT, interval=0.05)
    restartable_manager.kill()
    await restartable_manager.start()

    async def all_updated() -> bool:
        assert len(await in_place_events(api, ns)) >= 4
        return True

    await eventually(all_updated, timeout=LONG_TIMEOUT)
    await expect_groups_available(api, ns, 4, name=NAME)
    await expect_running_images(api, ns, {"leader": IMAGE, "worker": NEW_IMAGE})
    await expect_statefulsets_updated(api, ns, 5)
    assert await placement(api, ns) == before
    notes = await in_place_events(api, ns)
    assert sorted(notes) == sorted(set(notes)), "a group was updated twice"
    assert len(notes) == 4


async def test_new_cpu_requests_fall_back_to_the_rollout_where_the_nodes_do_not_resize(
    api: KubeClient, ns: str
) -> None:
    """kwok's pods report no container resources, as a kubelet without in-place resize: the API server
    would refuse the resize, so the groups are recreated (real nodes resize: tests/e2e/realnodes)."""
    await create(api, in_place_set(ns, 2, 2).worker_requests({"cpu": "100m"}).obj())
    await expect_groups_available(api, ns, 2, name=NAME)
    before = await placement(api, ns)
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/resources"
    await api.json_patch(
        LEADERWORKERSETS, ns, NAME, [{"op": "replace", "path": path, "value": {"requests": {"cpu": "200m"}}}]
    )
    await expect_every_pod_recreated(api, ns, before)
    await expect_groups_available(api, ns, 2, name=NAME)
    assert await in_place_events(api, ns) == []


async def test_lws_plan_shows_the_in_place_path_and_the_controller_takes_it(
    api: KubeClient, ns: str, full_cluster: LocalCluster, tmp_path: Path
) -> None:
    live = in_place_set(ns, 4, 2).max_unavailable(2)
    await create(api, live.obj())
    await expect_groups_available(api, ns, 4, name=NAME)
    new = live.worker_image(NEW_IMAGE).obj()
    path = tmp_path / "new.yaml"
    path.write_text(json.dumps(new))
    out = await lws_ok(full_cluster, "plan", "-f", str(path), "-n", ns)
    print(out)  # the docs' example (docs/in-place-updates.md)
    assert "in-place update of 4 groups (pod update): max(maxUnavailable, 1) = 2 at a time" in out
    assert "in-place path (update-strategy InPlaceIfPossible)" in out
    plan = json.loads(await lws_ok(full_cluster, "plan", "-f", str(path), "-n", ns, "-o", "json"))
    assert [(step["down"], step["up"]) for step in plan["steps"]] == [
        (["3", "2"], ["3", "2"]),
        (["1", "0"], ["1", "0"]),
    ]

    before = await placement(api, ns)
    await update_worker_image(api, ns, NEW_IMAGE, name=NAME)

    await expect_updated_in_place(api, ns, 4)
    await expect_groups_available(api, ns, 4, name=NAME)
    assert await placement(api, ns) == before
