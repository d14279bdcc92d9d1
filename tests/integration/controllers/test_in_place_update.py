"""In-place updates against the API server alone, the test playing the StatefulSet controller and the
kubelet: the handshake with the StatefulSet controller, step by step.

After patching a group's pods onto the update revision, the controller lowers a StatefulSet's partition
only once that StatefulSet's status counts those pods updated. kube-controller-manager watches pods and
StatefulSets on separate streams; a partition released on our own writes alone can reach it before
the relabelled pods do, and it then deletes a pod it still sees at the old revision (the group is
recreated). The full cluster hits that race only now and then (tests/e2e/test_in_place_updates.py);
here each step waits for the test's answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support import expect, kubelet, processed
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.lwsapi import update_worker_image
from tests.support.wait import consistently, eventually

pytestmark = [pytest.mark.cluster]

NAME = "test-sample"
WORKER_STS = LEADER = f"{NAME}-0"
WORKER = f"{NAME}-0-1"
CONTROLLER_REVISION_HASH = "controller-revision-hash"
NEW_IMAGE = "nginx:in-place"

Obj = dict[str, Any]


def _partition(sts: Obj) -> int:
    return int(((sts["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0)


async def _report(
    api: KubeClient, ns: str, name: str, *, update_revision: str, updated: int, rolled: bool = False
) -> None:
    """The StatefulSet controller's status: every replica ready, the current generation observed,
    `updated` pods counted at `update_revision`; `rolled`: that revision is the current one (the
    partition is gone and every pod is on it)."""
    sts = await api.get(STATEFULSETS, ns, name)
    replicas = int(sts["spec"].get("replicas") or 0)
    status = {
        "observedGeneration": sts["metadata"]["generation"],
        "replicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "currentReplicas": replicas,
        "updatedReplicas": updated,
        "currentRevision": update_revision if rolled else f"{name}-old",
        "updateRevision": update_revision,
    }
    await api.patch_status(STATEFULSETS, ns, name, {"status": status})


async def _partition_is(api: KubeClient, ns: str, name: str, want: int) -> bool:
    assert _partition(await api.get(STATEFULSETS, ns, name)) == want
    return True


async def _labelled(api: KubeClient, ns: str, pod: str, revision: str) -> bool:
    labels = (await api.get(PODS, ns, pod))["metadata"].get("labels") or {}
    assert labels.get(CONTROLLER_REVISION_HASH) == revision, labels
    return True


async def _on_the_new_template(api: KubeClient, ns: str) -> bool:
    """The leader StatefulSet carries the set's new revision (as the worker StatefulSet does)."""

    def key(sts: Obj) -> str:
        return str(sts["spec"]["template"]["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH])

    leader_sts = await api.get(STATEFULSETS, ns, NAME)
    assert key(leader_sts) == key(await api.get(STATEFULSETS, ns, WORKER_STS))
    return True


async def _group_up(api: KubeClient, ns: str) -> None:
    """The StatefulSet controllers create the group's pods, the kubelet runs them, all counted."""
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    leader = (await kubelet.create_leader_pods(api, lws, 0, 1))[0]
    await kubelet.create_worker_pods(api, lws, leader)
    await kubelet.leader_statefulset(api, ns, WORKER_STS)  # once the controller made it
    for pod in (LEADER, WORKER):
        await kubelet.set_pod_started_and_ready(api, ns, pod)
    await _report(api, ns, NAME, update_revision=f"{NAME}-old", updated=1)
    await _report(api, ns, WORKER_STS, update_revision=f"{WORKER_STS}-old", updated=1)
    await expect.expect_available_condition(api, ns)


async def test_each_partition_is_released_once_its_statefulset_counts_the_pods_updated_in_place(
    api: KubeClient, ns: str
) -> None:
    lws = LeaderWorkerSetBuilder(ns).replicas(1).size(2)
    lws.annotation(ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE)
    await api.create(LEADERWORKERSETS, lws.obj())
    await _group_up(api, ns)

    await update_worker_image(api, ns, NEW_IMAGE, name=NAME)

    async def worker_template_held() -> bool:
        sts = await api.get(STATEFULSETS, ns, WORKER_STS)
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == NEW_IMAGE
        assert _partition(sts) == 1, sts["spec"].get("updateStrategy")
        return True

    await eventually(worker_template_held)

    # The worker StatefulSet's controller publishes the update revision: the worker is patched onto
    # it, and the partition stays while the controller's status counts no pod updated.
    await _report(api, ns, WORKER_STS, update_revision=f"{WORKER_STS}-new", updated=0)
    await eventually(lambda: _labelled(api, ns, WORKER, f"{WORKER_STS}-new"))
    await kubelet.set_pod_started_and_ready(api, ns, WORKER)  # restarted on its new image

    await consistently(lambda: _partition_is(api, ns, WORKER_STS, 1))

    # Once its status counts the worker, the partition goes.
    await _report(api, ns, WORKER_STS, update_revision=f"{WORKER_STS}-new", updated=1)

    await eventually(lambda: _partition_is(api, ns, WORKER_STS, 0))
    # ... and the StatefulSet controller finds every pod on the update revision.
    await _report(api, ns, WORKER_STS, update_revision=f"{WORKER_STS}-new", updated=1, rolled=True)

    # The leader StatefulSet's controller publishes its update revision: the leader is labelled last,
    # the group is done, and the leader partition stays until that status counts the leader.
    await eventually(lambda: _on_the_new_template(api, ns))
    await _report(api, ns, NAME, update_revision=f"{NAME}-new", updated=0)
    await eventually(lambda: _labelled(api, ns, LEADER, f"{NAME}-new"))

    async def group_done() -> bool:
        assert len(await expect.events_with(api, ns, ext.EVENT_GROUP_UPDATED_IN_PLACE)) == 1
        return True

    await eventually(group_done)

    await consistently(lambda: _partition_is(api, ns, NAME, 1))

    await _report(api, ns, NAME, update_revision=f"{NAME}-new", updated=1)

    await eventually(lambda: _partition_is(api, ns, NAME, 0))
    await _report(api, ns, NAME, update_revision=f"{NAME}-new", updated=1, rolled=True)
    await expect.expect_available_condition(api, ns)
    pods = {name: await api.get(PODS, ns, name) for name in (LEADER, WORKER)}
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods.values()), "a pod was deleted"
    assert pods[WORKER]["spec"]["containers"][0]["image"] == NEW_IMAGE


async def test_a_worker_holding_its_new_tolerations_is_not_patched_again_each_round(
    api: KubeClient, ns: str
) -> None:
    """The API server appends its own tolerations to every pod (DefaultTolerationSeconds), so a pod
    never holds exactly the template's list: the update must compare tolerations one by one."""
    lws = LeaderWorkerSetBuilder(ns).replicas(1).size(2)
    lws.annotation(ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE)
    await api.create(LEADERWORKERSETS, lws.obj())
    await _group_up(api, ns)

    spot = {"key": "example.com/spot", "operator": "Exists"}
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/tolerations"
    await api.json_patch(LEADERWORKERSETS, ns, NAME, [{"op": "add", "path": path, "value": [spot]}])

    async def worker_template_held() -> bool:
        sts = await api.get(STATEFULSETS, ns, WORKER_STS)
        assert sts["spec"]["template"]["spec"].get("tolerations") == [spot]
        assert _partition(sts) == 1, sts["spec"].get("updateStrategy")
        return True

    await eventually(worker_template_held)
    # The worker is patched onto the published revision; its StatefulSet's status does not count it
    # yet, so the group stays started and every round looks at the worker again.
    await _report(api, ns, WORKER_STS, update_revision=f"{WORKER_STS}-new", updated=0)
    await eventually(lambda: _labelled(api, ns, WORKER, f"{WORKER_STS}-new"))
    held = (await api.get(PODS, ns, WORKER))["spec"]["tolerations"]
    assert spot in held
    assert len(held) > 1, held  # with the API server's own
    sent = processed.patches(PODS.plural, ns, WORKER)
    assert sent >= 1

    rounds = 3
    for nudge in range(rounds):
        annotations = {"example.com/nudge": str(nudge)}
        await api.merge_patch(LEADERWORKERSETS, ns, NAME, {"metadata": {"annotations": annotations}})
        await processed.expect_lws_processed(api, ns, NAME)

    assert processed.patches(PODS.plural, ns, WORKER) == sent
    assert (await api.get(PODS, ns, WORKER))["spec"]["tolerations"] == held
