"""One image update of a probe LeaderWorkerSet on real nodes, watched to the end: shared by the real-node
test (which checks what happened) and benchmarks/in_place_update.py (which times it).

`update_probe_image` creates the set (`in_place` adds `update-strategy: InPlaceIfPossible`), waits until
it is Available, sets every container's image to PROBE_V2 and waits until every pod runs it, every group
is updated and Ready; it returns the pods before and after, and the seconds from the update to the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS
from tests.support.realnodes import PROBE_V2, lws_available, probe_lws
from tests.support.wait import LONG_TIMEOUT, eventually

Obj = dict[str, Any]


@dataclass(frozen=True)
class ImageUpdate:
    before: dict[str, tuple[str, str]]  # pod name → (UID, node)
    after: dict[str, tuple[str, str]]
    seconds: float

    @property
    def rescheduled(self) -> int:
        """Pods of the set that are new pods (a new UID) after the update."""
        return sum(1 for name, (uid, _) in self.after.items() if self.before.get(name, ("", ""))[0] != uid)


async def _placement(api: KubeClient, ns: str, name: str) -> dict[str, tuple[str, str]]:
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
    return {p["metadata"]["name"]: (p["metadata"]["uid"], p["spec"].get("nodeName", "")) for p in pods}


async def update_probe_image(
    api: KubeClient, ns: str, name: str, *, replicas: int, size: int, in_place: bool
) -> ImageUpdate:
    lws = probe_lws(ns, name, replicas=replicas, size=size)
    if in_place:
        lws["metadata"]["annotations"] = {ext.ANNOTATION_UPDATE_STRATEGY: ext.UPDATE_STRATEGY_IN_PLACE}
    await api.create(LEADERWORKERSETS, lws)
    await eventually(lambda: lws_available(api, ns, name), timeout=LONG_TIMEOUT * 2)
    before = await _placement(api, ns, name)
    current = await api.get(LEADERWORKERSETS, ns, name)
    for template in ("leaderTemplate", "workerTemplate"):
        current["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]["image"] = PROBE_V2
    started = time.monotonic()
    updated = await api.update(LEADERWORKERSETS, current)

    async def done() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, name)
        status = lws.get("status") or {}
        assert status.get("observedGeneration") == updated["metadata"]["generation"]
        assert (status.get("updatedReplicas"), status.get("readyReplicas")) == (replicas, replicas)
        pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
        assert len(pods) == replicas * size
        for pod in pods:
            statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
            assert pod["spec"]["containers"][0]["image"] == PROBE_V2
            assert statuses[0].get("image", "").endswith(PROBE_V2), pod["metadata"]["name"]
            assert statuses[0].get("ready"), pod["metadata"]["name"]
        return await lws_available(api, ns, name)

    await eventually(done, timeout=LONG_TIMEOUT * 4, interval=0.5)
    return ImageUpdate(before, await _placement(api, ns, name), time.monotonic() - started)
