"""A swap to upstream's controller after an in-place group restart (docs/in-place-restart.md).

Ours equips the pods (webhook) and restarts group 0 in place (kwok plays the kubelets: the restart-all is
a container status with its restart count raised); the templates, revisions and ControllerRevisions are
untouched. Upstream v0.9.0 then takes over: it reads a container restart count above zero under
`RecreateGroupOnPodRestart` as a failure and recreates group 0 — once — while group 1, never
restarted, is left alone. This is the limit docs/in-place-restart.md states; the test holds it to that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.lifecycle import inplacerestart
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import CONTROLLER_REVISIONS, NAMESPACES, NODES, PODS, STATEFULSETS
from tests.e2e.install.conftest import InstallEnv, started, stopped
from tests.support import kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import LONG_TIMEOUT, consistently, eventually

# one install cluster for the package (install_env, conftest.py): one worker runs it
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("install")]

NS, NAME = "swap-in-place-restart", "inplace"
RESTART_ALL_FEATURE = "RestartAllContainersOnContainerExits"
Obj = dict[str, Any]


async def _uids(api: KubeClient) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in await api.list(PODS, NS)}


async def _templates(api: KubeClient) -> tuple[Any, ...]:
    sets = sorted((s["metadata"]["name"], s["spec"]["template"]) for s in await api.list(STATEFULSETS, NS))
    revisions = sorted(r["metadata"]["name"] for r in await api.list(CONTROLLER_REVISIONS, NS))
    return tuple(sets), tuple(revisions)


async def test_after_an_in_place_restart_upstream_recreates_that_group_once_and_no_other(
    install_env: InstallEnv,
    upstream_binary: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, cluster = install_env.api, install_env.cluster
    monkeypatch.setenv(ext.ENV_RESTART_AGENT_IMAGE, "lws.local/lws-python:v0")  # inherited by the managers
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    webhooks = await started(
        ManagerProcess(cluster, "lws-webhooks-in-place", extra_args=("--webhooks-only",)), api
    )
    ours: ManagerProcess | None = await started(
        ManagerProcess(cluster, "lws-controllers-in-place", extra_args=("--disable-webhooks",))
    )
    upstream: ManagerProcess | None = None
    try:
        lws = (
            LeaderWorkerSetBuilder(NS, NAME).replicas(2).size(2)
            .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
            .annotation(ext.ANNOTATION_RESTART_STRATEGY, inplacerestart.IN_PLACE).obj()
        )  # fmt: skip
        # The scheduler places a pod with a RestartAllContainers rule only on a node that declares the
        # feature (Node Declared Features, GA in 1.37): a real kubelet does, kwok's nodes play it.
        for node in await api.list(NODES, None):
            declared = {"status": {"declaredFeatures": [RESTART_ALL_FEATURE]}}
            await api.patch_status(NODES, None, node["metadata"]["name"], declared)
        await create(api, lws)
        await expect_groups_available(api, NS, 2, name=NAME)
        pods = await api.list(PODS, NS)
        assert len(pods) == 4
        assert all(inplacerestart.equipped(p) for p in pods)
        before_uids, before_templates = await _uids(api), await _templates(api)

        # Group 0 restarts in place: the worker's restart-all, then the leader's (its agent's).
        await kubelet.crash_container(api, NS, f"{NAME}-0-1", exit_code=137, reason="RestartingAllContainers")

        async def ordered() -> bool:
            leader = await api.get(PODS, NS, f"{NAME}-0")
            return (leader["metadata"].get("annotations") or {}).get(ext.ANNOTATION_RESTART_ORDERED) == "1"

        await eventually(ordered)
        await kubelet.crash_container(api, NS, f"{NAME}-0", exit_code=137, reason="RestartingAllContainers")

        async def settled() -> bool:
            return inplacerestart.in_place_restart_state(await api.get(PODS, NS, f"{NAME}-0")).settled

        await eventually(settled, timeout=LONG_TIMEOUT)
        assert await _uids(api) == before_uids
        assert await _templates(api) == before_templates  # nothing rolled: upstream's view is whole

        await stopped(ours)
        ours = None
        upstream = await started(UpstreamControllers(cluster, upstream_binary, "lws-upstream-in-place"))

        async def group_zero_recreated() -> bool:
            now = await _uids(api)
            return now.get(f"{NAME}-0") not in (None, before_uids[f"{NAME}-0"])

        await eventually(group_zero_recreated, timeout=LONG_TIMEOUT)
        await expect_groups_available(api, NS, 2, name=NAME)

        async def once_and_group_one_untouched() -> bool:
            now = await _uids(api)
            assert {k: now.get(k) for k in (f"{NAME}-1", f"{NAME}-1-1")} == {
                k: before_uids[k] for k in (f"{NAME}-1", f"{NAME}-1-1")
            }
            return True

        await consistently(once_and_group_one_untouched, duration=5)
        recreated = await _uids(api)
        await consistently(lambda: _same(api, recreated), duration=5)  # the new group 0 is left alone
    finally:
        for manager in (upstream, ours, webhooks):
            if manager is not None:
                await stopped(manager)
        await api.delete(NAMESPACES, None, NS)


async def _same(api: KubeClient, uids: dict[str, str]) -> bool:
    assert await _uids(api) == uids
    return True
