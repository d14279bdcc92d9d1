"""The swap promise of in-place updates (docs/in-place-updates.md): after ours updated a set's
groups in place (new images, a new label), upstream's controller takes over and finds an updated
set, not a pending rollout: it restarts or recreates no pod, changes no StatefulSet template and
makes no revision.

What makes that hold: the StatefulSets carry the new templates, each pod the StatefulSet's update
revision (which is also its current one) and the LWS revision label of the set's revision, and only
that LWS ControllerRevision is left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.runtime.resources import EVENTS, LEADERWORKERSETS, NAMESPACES
from tests.e2e.install.conftest import InstallEnv, started, stopped
from tests.support import unchanged
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create, pods_by_name
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import LONG_TIMEOUT, eventually

# one install cluster for the package (install_env, conftest.py): one worker runs it
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("install")]

NAME = "updated"
NEW_IMAGE = "nginx:2"


async def test_after_an_in_place_update_upstream_takes_over_without_a_restart_or_rollout(
    install_env: InstallEnv, upstream_binary: Path
) -> None:
    api, cluster = install_env.api, install_env.cluster
    ns = "swap-in-place-update"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    webhooks = await started(
        ManagerProcess(cluster, "lws-webhooks-in-place", extra_args=("--webhooks-only",)), api
    )
    ours = await started(
        ManagerProcess(cluster, "lws-controllers-in-place", extra_args=("--disable-webhooks",))
    )
    upstream: ManagerProcess | None = None
    try:
        builder = LeaderWorkerSetBuilder(ns, NAME).replicas(2).size(2)
        await create(
            api, builder.annotation(ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE).obj()
        )
        await expect_groups_available(api, ns, 2, name=NAME)
        before = {name: pod["metadata"]["uid"] for name, pod in (await pods_by_name(api, ns, NAME)).items()}
        templates = "/spec/leaderWorkerTemplate"
        await api.json_patch(
            LEADERWORKERSETS,
            ns,
            NAME,
            [
                {
                    "op": "replace",
                    "path": f"{templates}/leaderTemplate/spec/containers/0/image",
                    "value": NEW_IMAGE,
                },
                {
                    "op": "replace",
                    "path": f"{templates}/workerTemplate/spec/containers/0/image",
                    "value": NEW_IMAGE,
                },
                {
                    "op": "add",
                    "path": f"{templates}/workerTemplate/metadata",
                    "value": {"labels": {"team": "b"}},
                },
            ],
        )

        async def updated_in_place() -> bool:
            events = [
                e for e in await api.list(EVENTS, ns) if e.get("reason") == ext.EVENT_GROUP_UPDATED_IN_PLACE
            ]
            assert len(events) == 2
            pods = await pods_by_name(api, ns, NAME)
            assert {name: pod["metadata"]["uid"] for name, pod in pods.items()} == before
            assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {NEW_IMAGE}
            return True

        await eventually(updated_in_place, timeout=LONG_TIMEOUT)
        await expect_groups_available(api, ns, 2, name=NAME)
        under_ours = await unchanged.settled(api, ns)
        assert len([r for r in under_ours["revisions"] if r[2] == c.LWS_KIND]) == 1  # history truncated

        # Ours → upstream: an updated set, nothing to roll.
        await stopped(ours)
        upstream = await started(UpstreamControllers(cluster, upstream_binary, "lws-upstream-after-in-place"))
        await unchanged.expect_quiet_takeover(api, ns, under_ours, "probe-upstream-in-place")
        status = (await api.get(LEADERWORKERSETS, ns, NAME))["status"]
        assert (status.get("updatedReplicas"), status.get("readyReplicas")) == (2, 2)
    finally:
        if upstream is not None:
            await stopped(upstream)
        await stopped(ours)
        await stopped(webhooks)
        await api.delete(NAMESPACES, None, ns)
