"""Acting on and reading LeaderWorkerSets through the API server, as a user or kubectl would."""

from __future__ import annotations

from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONTROLLER_REVISIONS, LEADERWORKERSETS, PODS, STATEFULSETS
from tests.support.builders import NAME
from tests.support.objects import labels

Obj = dict[str, Any]
NEW_IMAGE = "docker.io/nginxinc/nginx-unprivileged:1.28"


async def create(api: KubeClient, lws: Obj) -> Obj:
    return await api.create(LEADERWORKERSETS, lws, lws["metadata"]["namespace"])


async def update_worker_image(api: KubeClient, ns: str, image: str = NEW_IMAGE, name: str = NAME) -> None:
    """upstream's UpdateWorkerTemplate: a new worker image, hence a new revision and a rollout."""
    path = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"
    await api.json_patch(LEADERWORKERSETS, ns, name, [{"op": "replace", "path": path, "value": image}])


async def leader_statefulset_revision_key(api: KubeClient, ns: str, name: str = NAME) -> str:
    """The revision key every up-to-date object carries: the leader StatefulSet's (unlike
    `kubelet.current_revision_key`, which computes it from the LeaderWorkerSet)."""
    sts = await api.get(STATEFULSETS, ns, name)
    return labels(sts)[c.LABEL_TEMPLATE_REVISION_HASH]


async def pods_by_name(api: KubeClient, ns: str, name: str = NAME) -> dict[str, Obj]:
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
    return {pod["metadata"]["name"]: pod for pod in pods}


async def lws_revisions(api: KubeClient, ns: str, name: str = NAME) -> list[Obj]:
    """The LWS's own ControllerRevisions (the StatefulSet controller keeps its own beside them)."""
    revisions = await api.list(CONTROLLER_REVISIONS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
    return [
        r
        for r in revisions
        if any(o["kind"] == c.LWS_KIND for o in r["metadata"].get("ownerReferences") or [])
    ]


async def revision_count(api: KubeClient, ns: str, name: str = NAME) -> int:
    return len(await lws_revisions(api, ns, name))
