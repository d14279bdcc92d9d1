"""M13: swap upstream's Go controller for ours and back without restarting a pod.

Upstream's manager is built from ``sigs.k8s.io/lws`` at the newest version the module proxy serves
(v0.9.0; v1.0.0 is refused) and cached like the control plane. It runs the controllers with its
webhooks off (``ENABLE_WEBHOOKS=false``); our webhook server admits for both throughout, so what is
swapped is exactly the reconciling side. With four LeaderWorkerSets mid-life under upstream (one
mid-rollout, held by a partition; one with a restart budget, raised once ours runs), upstream is
stopped and ours started: no pod is recreated or restarted (UIDs, restartCounts), no
ControllerRevision appears, no StatefulSet template changes; then the held rollout completes under
ours, and upstream takes over again just as quietly.

A second swap runs ours → upstream → ours on a set that carries every opt-in annotation of
`api/extensions.py`: the same quiet takeovers.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.resources import (
    LEADERWORKERSETS,
    NAMESPACES,
    PODDISRUPTIONBUDGETS,
)
from tests.e2e.install.conftest import InstallEnv, started, stopped
from tests.support import unchanged
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.expect import expect_groups_available
from tests.support.lwsapi import create, update_worker_image
from tests.support.manager import ManagerProcess, UpstreamControllers
from tests.support.wait import LONG_TIMEOUT, eventually

# one install cluster for the package (install_env, conftest.py): one worker runs it
pytestmark = [pytest.mark.cluster, pytest.mark.full, pytest.mark.xdist_group("install")]

Obj = dict[str, Any]


def _ours(cluster: LocalCluster, name: str, *args: str) -> ManagerProcess:
    return ManagerProcess(cluster, name, extra_args=args)


def _reconciles(manager: ManagerProcess, controller: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{manager.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    pattern = rf'controller_runtime_reconcile_total\{{[^}}]*controller="{controller}"[^}}]*\}} ([0-9.e+]+)'
    return sum(float(v) for v in re.findall(pattern, text))


# ----- the swap ------------------------------------------------------------------------------------
async def test_swap_upstream_for_ours_and_back_restarts_no_pod(
    install_env: InstallEnv, upstream_binary: Path
) -> None:
    api, cluster = install_env.api, install_env.cluster
    ns = "swap"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    webhooks = await started(_ours(cluster, "lws-webhooks-for-swap", "--webhooks-only"), api)
    upstream = await started(UpstreamControllers(cluster, upstream_binary, "lws-upstream-v0.9.0"))
    try:
        # Three LeaderWorkerSets under upstream; "held" is mid-rollout (partition 1 of 3 groups).
        await create(api, LeaderWorkerSetBuilder(ns, "plain").replicas(2).size(2).obj())
        await create(api, LeaderWorkerSetBuilder(ns, "unique").replicas(2).size(3).subdomain_policy(
            c.SUBDOMAIN_UNIQUE_PER_REPLICA).obj())  # fmt: skip
        await create(api, LeaderWorkerSetBuilder(ns, "held").replicas(3).size(2).obj())
        # A restart budget is no part of a revision: upstream v0.9.0 does not know the
        # field, v1.0 leaves it out, and so must we, or this set would roll at each swap.
        await create(
            api, LeaderWorkerSetBuilder(ns, "budgeted").replicas(2).size(2).max_group_restarts(2).obj()
        )
        for name, replicas in (("plain", 2), ("unique", 2), ("held", 3), ("budgeted", 2)):
            await expect_groups_available(api, ns, replicas, name=name)
        await api.merge_patch(
            LEADERWORKERSETS,
            ns,
            "held",
            {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 1}}}},
        )
        await update_worker_image(api, ns, name="held")

        async def held_mid_rollout() -> bool:
            status = (await api.get(LEADERWORKERSETS, ns, "held"))["status"]
            return bool(status.get("updatedReplicas") == 2 and status.get("readyReplicas") == 3)

        await eventually(held_mid_rollout, timeout=LONG_TIMEOUT)
        under_upstream = await unchanged.settled(api, ns)
        assert len(under_upstream["pods"]) == 2 * 2 + 2 * 3 + 3 * 2 + 2 * 2

        # Upstream → ours.
        await stopped(upstream)
        ours = await started(_ours(cluster, "lws-controllers-for-swap", "--disable-webhooks"))
        await eventually(lambda: _reconciles(ours, "leaderworkerset") >= 3, timeout=LONG_TIMEOUT)
        await unchanged.expect_quiet_takeover(api, ns, under_upstream, "probe-ours")

        # Raising the budget under ours is a live change: processed, and nothing moves.
        raised = {"spec": {"leaderWorkerTemplate": {"maxGroupRestarts": 5}}}
        await api.merge_patch(LEADERWORKERSETS, ns, "budgeted", raised)
        await unchanged.expect_generation_observed(api, ns, "budgeted")
        assert unchanged.without(await unchanged.settled(api, ns), "probe-ours") == under_upstream

        # The held rollout completes under ours, onto the revision upstream created.
        await api.merge_patch(
            LEADERWORKERSETS,
            ns,
            "held",
            {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 0}}}},
        )
        await expect_groups_available(api, ns, 3, name="held")
        after_rollout = await unchanged.settled(api, ns)
        # No new LeaderWorkerSet revision (the superseded one is truncated); the StatefulSet
        # controller records its own for the recreated group 0, which is expected.
        lws_revisions = {r for r in after_rollout["revisions"] if r[2] == c.LWS_KIND}
        assert lws_revisions < {r for r in under_upstream["revisions"] if r[2] == c.LWS_KIND}
        for name in ("plain", "unique", "budgeted"):
            for pod, value in under_upstream["pods"].items():
                if pod.startswith(f"{name}-"):
                    assert after_rollout["pods"][pod] == value, pod
        for pod in ("held-1", "held-1-1", "held-2", "held-2-1"):
            assert after_rollout["pods"][pod] == under_upstream["pods"][pod], f"{pod} was already updated"

        # Ours → upstream.
        await stopped(ours)
        upstream = await started(UpstreamControllers(cluster, upstream_binary, "lws-upstream-v0.9.0-again"))
        await unchanged.expect_quiet_takeover(api, ns, after_rollout, "probe-upstream")
    finally:
        await stopped(upstream)
        await stopped(webhooks)
        await api.delete(NAMESPACES, None, ns)


def every_user_extension() -> dict[str, str]:
    """Every opt-in annotation of ours with its example value, read from the one table (a key added
    there is swap-tested here without a second list)."""
    annotations = {}
    for extension in ext.user_extensions():
        assert extension.example is not None, f"{extension.key}: a user key needs an example value"
        annotations[extension.key] = extension.example
    return annotations


async def test_every_feature_on_swaps_ours_upstream_ours_without_a_restart(
    install_env: InstallEnv, upstream_binary: Path
) -> None:
    """Every opt-in feature at once: a set with every feature switched on runs under ours, then upstream's,
    then ours again, and nothing but its status is touched: no pod restarted or recreated, no
    StatefulSet template or ControllerRevision changed, no rollout started."""
    api, cluster = install_env.api, install_env.cluster
    ns = "swap-features"
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    webhooks = await started(_ours(cluster, "lws-webhooks-for-features", "--webhooks-only"), api)
    ours = await started(_ours(cluster, "lws-controllers-with-features", "--disable-webhooks"))
    upstream: ManagerProcess | None = None
    try:
        features = every_user_extension()
        lws = LeaderWorkerSetBuilder(ns, "featured").replicas(2).size(2).annotations(features).obj()
        await create(api, lws)
        await expect_groups_available(api, ns, 2, name="featured")
        stored = (await api.get(LEADERWORKERSETS, ns, "featured"))["metadata"]["annotations"]
        ours_stored = {
            key: value for key, value in stored.items() if key.startswith(ext.EXTENSION_DOMAIN + "/")
        }
        assert ours_stored == features
        assert len(ours_stored) == len([e for e in ext.EXTENSIONS if e.writer is ext.Writer.USER]) >= 2

        async def features_on() -> bool:  # a positive sign our controller acts on them
            status = (await api.get(LEADERWORKERSETS, ns, "featured"))["status"]
            types = {cond["type"]: cond["status"] for cond in status.get("conditions") or []}
            budgets = await api.list(
                PODDISRUPTIONBUDGETS, ns, label_selector=ext.LABEL_GROUP_DISRUPTION_BUDGET
            )
            return types.get(ext.CONDITION_ROLLOUT_PAUSED) == c.CONDITION_TRUE and len(budgets) == 2

        await eventually(features_on, timeout=LONG_TIMEOUT)
        under_ours = await unchanged.settled(api, ns)
        assert len(under_ours["pods"]) == 2 * 2

        # Ours → upstream: it reads none of our annotations and finds nothing to do.
        await stopped(ours)
        upstream = await started(UpstreamControllers(cluster, upstream_binary, "lws-upstream-with-features"))
        await unchanged.expect_quiet_takeover(api, ns, under_ours, "probe-upstream-features")

        # Upstream → ours again: the features are back on, and still nothing moves.
        await stopped(upstream)
        upstream = None
        ours = await started(_ours(cluster, "lws-controllers-with-features-again", "--disable-webhooks"))
        await unchanged.expect_quiet_takeover(api, ns, under_ours, "probe-ours-features")
        await eventually(features_on, timeout=LONG_TIMEOUT)
        assert unchanged.without(await unchanged.snapshot(api, ns), "probe-") == unchanged.without(
            under_ours, "probe-"
        )
    finally:
        if upstream is not None:
            await stopped(upstream)
        await stopped(ours)
        await stopped(webhooks)
        await api.delete(NAMESPACES, None, ns)
