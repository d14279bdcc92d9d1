"""Diff-aware in-place updates on real nodes: probe v1 → v2 with `update-strategy:
InPlaceIfPossible`. The kubelets restart the containers in place: the same pods on the same nodes
run the new image, the group's restarts are the update's (no group recreated), every StatefulSet
reports its update revision as current. (Timed against the normal rollout by
benchmarks/in_place_update.py; docs/in-place-updates.md.)"""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.observe import diagnosis
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support.builders.probe import PROBE_IMAGE
from tests.support.inplacerun import update_probe_image
from tests.support.realnodes import lws_available, probe_lws
from tests.support.wait import LONG_TIMEOUT, eventually

# one cluster with real nodes per machine (the bridge lws0, conftest.py)
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("realnodes")]

MISSING_IMAGE = "lws.local/probe:missing"  # in no node's containerd, and no registry is reachable


async def test_a_new_probe_image_reaches_every_group_in_place_with_no_pod_rescheduled(
    real_api: KubeClient, real_ns: str
) -> None:
    update = await update_probe_image(real_api, real_ns, "inplace", replicas=2, size=2, in_place=True)
    assert update.after == update.before, "a pod was recreated or moved"
    assert update.rescheduled == 0
    events = await real_api.list(EVENTS, real_ns)
    assert len([e for e in events if e.get("reason") == ext.EVENT_GROUP_UPDATED_IN_PLACE]) == 2
    for sts in await real_api.list(STATEFULSETS, real_ns, label_selector=f"{c.LABEL_SET_NAME}=inplace"):
        assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"], sts["metadata"]["name"]
    # The kubelet restarted the containers (the workers also once when their leader went away), and
    # the restart policy took none of it for a failure.
    reasons = {e.get("reason") for e in await real_api.list(EVENTS, real_ns)}
    assert c.EVENT_RECREATE_GROUP not in reasons


async def test_new_cpu_requests_are_resized_in_place_by_the_kubelets(
    real_api: KubeClient, real_ns: str
) -> None:
    """Real kubelets (1.37) resize in place: the same pods get the new CPU request, nothing restarts."""
    lws = probe_lws(real_ns, "resized", replicas=2, size=2)
    lws["metadata"]["annotations"] = {ext.ANNOTATION_UPDATE_STRATEGY: ext.UPDATE_STRATEGY_IN_PLACE}
    await real_api.create(LEADERWORKERSETS, lws)
    await eventually(lambda: lws_available(real_api, real_ns, "resized"), timeout=LONG_TIMEOUT * 2)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await resized_pods(real_api, real_ns)}
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/resources/requests/cpu"
    await real_api.json_patch(
        LEADERWORKERSETS, real_ns, "resized", [{"op": "replace", "path": path, "value": "20m"}]
    )

    async def resized() -> bool:
        pods = await resized_pods(real_api, real_ns)
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == before
        for pod in pods:
            if pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] == "0":
                continue
            status = pod["status"]["containerStatuses"][0]
            assert status["resources"]["requests"]["cpu"] == "20m", pod["metadata"]["name"]
            assert status["restartCount"] == 0
        events = await real_api.list(EVENTS, real_ns)
        notes = [e["note"] for e in events if e.get("reason") == ext.EVENT_GROUP_UPDATED_IN_PLACE]
        assert len(notes) == 2
        assert all("(resize)" in note for note in notes)
        return await lws_available(real_api, real_ns, "resized")

    await eventually(resized, timeout=LONG_TIMEOUT * 2, interval=0.5)


async def resized_pods(api: KubeClient, ns: str) -> list[dict[str, Any]]:
    return await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}=resized")


async def test_an_image_that_cannot_be_pulled_halts_the_in_place_update_at_its_progress_deadline(
    real_api: KubeClient, real_ns: str
) -> None:
    """The first group gets the missing image and stays unavailable: no further group starts, and the
    progress deadline halts the rollout naming the pull failure. Nothing is recreated."""
    lws = probe_lws(real_ns, "missing", replicas=2, size=2)
    lws["metadata"]["annotations"] = {
        ext.ANNOTATION_UPDATE_STRATEGY: ext.UPDATE_STRATEGY_IN_PLACE,
        ext.ANNOTATION_ROLLOUT_PROGRESS_DEADLINE: "10",
    }
    await real_api.create(LEADERWORKERSETS, lws)
    await eventually(lambda: lws_available(real_api, real_ns, "missing"), timeout=LONG_TIMEOUT * 2)
    pods = await real_api.list(PODS, real_ns, label_selector=f"{c.LABEL_SET_NAME}=missing")
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    current = await real_api.get(LEADERWORKERSETS, real_ns, "missing")
    for template in ("leaderTemplate", "workerTemplate"):
        current["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]["image"] = MISSING_IMAGE
    await real_api.update(LEADERWORKERSETS, current)

    async def halted() -> bool:
        status = (await real_api.get(LEADERWORKERSETS, real_ns, "missing")).get("status") or {}
        found = [
            x
            for x in status.get("conditions") or []
            if x["type"] == ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED
        ]
        assert found, "not halted yet"
        assert (found[0]["status"], found[0]["reason"]) == (c.CONDITION_TRUE, diagnosis.CAUSE_IMAGE_PULL)
        return True

    await eventually(halted, timeout=LONG_TIMEOUT)
    pods = await real_api.list(PODS, real_ns, label_selector=f"{c.LABEL_SET_NAME}=missing")
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods} == before, "a pod was recreated"
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in pods}
    assert images == {
        "missing-0": PROBE_IMAGE,
        "missing-0-1": PROBE_IMAGE,
        "missing-1": MISSING_IMAGE,
        "missing-1-1": MISSING_IMAGE,
    }
    events = await real_api.list(EVENTS, real_ns)
    assert len([e for e in events if e.get("reason") == ext.EVENT_GROUP_UPDATED_IN_PLACE]) == 1
