"""Diff-aware in-place updates on real nodes (issue 27): probe v1 → v2 with `update-strategy:
InPlaceIfPossible`. The kubelets restart the containers in place: the same pods on the same nodes
run the new image, the group's restarts are the update's (no group recreated), every StatefulSet
reports its update revision as current. (Timed against the normal rollout by
benchmarks/in_place_update.py; docs/in-place-updates.md.)"""

from __future__ import annotations

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import EVENTS, STATEFULSETS
from tests.support.inplacerun import update_probe_image


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
