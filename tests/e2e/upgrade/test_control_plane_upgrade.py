"""A control-plane upgrade across the supported window restarts no group.

One cluster, one etcd: LeaderWorkerSets of every identity and policy and a DisaggregatedSet are
created on the oldest supported Kubernetes, with `lws manager` running throughout. Then
kube-apiserver, kube-controller-manager and kube-scheduler are replaced by each newer minor in turn,
as a real upgrade does. After each step, once the new control plane demonstrably works (a fresh set
comes up under it), every pod keeps its UID and restart count, no ControllerRevision appears or goes,
and no StatefulSet or Deployment template changes: the class of bug of kubernetes#134773 (a
kube-controller-manager whose revision bytes changed rolled every StatefulSet, i.e. restarted every
group) and of lws#797 (the same in lws's own revision). Then a rolling update still completes.

It needs the control plane of every supported version (about 16 minutes of build each on two
cores), so it runs in the version matrix (`make matrix`), not in `make test`: without those builds
it is skipped, saying which are missing; LWS_BUILD_ALL_VERSIONS=1 lets it build them.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build, versions
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS, NAMESPACES
from tests.e2e.conftest import MANAGERS
from tests.support import clusters, unchanged
from tests.support.builders import DisaggregatedSetBuilder, LeaderWorkerSetBuilder
from tests.support.expect import expect_ds_available, expect_groups_available
from tests.support.lwsapi import create, update_worker_image
from tests.support.manager import ManagerProcess
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.full,
    # a cluster started and upgraded through every supported version, whose control planes it may build
    pytest.mark.timeout(3600),
]

NS = "upgrade"
WINDOW = versions.SUPPORTED_KUBERNETES_VERSIONS


@pytest.fixture(scope="module")
def control_planes() -> dict[str, Path]:
    missing = [v for v in WINDOW if not build.is_complete(build.bin_dir_for(kube_version=v))]
    if missing and os.environ.get("LWS_BUILD_ALL_VERSIONS") != "1":
        pytest.skip(
            f"the upgrade test needs the control plane of every supported version; not built: "
            f"{', '.join(missing)}. `make matrix` builds them (or LWS_BUILD_ALL_VERSIONS=1)"
        )
    return {v: build.ensure_binaries(v) for v in WINDOW}


@pytest.fixture(scope="module")
async def upgrading(control_planes: dict[str, Path]) -> AsyncIterator[tuple[LocalCluster, KubeClient]]:
    workdir = Path(tempfile.mkdtemp(prefix="lws-test-upgrade-"))
    options = ClusterOptions(shape="full", nodes=6, die_with_parent=True, supervise=True)
    cluster = LocalCluster("test-upgrade", workdir, control_planes[WINDOW[0]], options)
    await asyncio.to_thread(cluster.start)
    clusters.STARTED.append(cluster)
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    manager = ManagerProcess(cluster, name="lws-manager-upgrade")
    try:
        await install_crds(api.lightkube)
        MANAGERS.append(manager)
        await manager.start()
        yield cluster, api
    finally:
        await manager.stop()
        if manager in MANAGERS:
            MANAGERS.remove(manager)
        await api.close()
        clusters.stop(cluster)


def every_identity_and_policy() -> list[LeaderWorkerSetBuilder]:
    """The shapes whose revision or StatefulSet template an upgrade could move."""
    sets = [
        LeaderWorkerSetBuilder(NS, "plain").replicas(2).size(2),
        LeaderWorkerSetBuilder(NS, "recreate").replicas(2).size(3)
        .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART).max_group_restarts(3),
        LeaderWorkerSetBuilder(NS, "after-start").replicas(1).size(2)
        .restart_policy(c.RESTART_POLICY_RECREATE_GROUP_AFTER_START),
        LeaderWorkerSetBuilder(NS, "leader-ready").replicas(1).size(2)
        .startup_policy(c.STARTUP_POLICY_LEADER_READY),
        LeaderWorkerSetBuilder(NS, "unique").replicas(2).size(2)
        .subdomain_policy(c.SUBDOMAIN_UNIQUE_PER_REPLICA),
        LeaderWorkerSetBuilder(NS, "subgroups").replicas(1).size(4).subgroup(2),
        LeaderWorkerSetBuilder(NS, "excluded").replicas(1).size(3)
        .subgroup(2, c.SUBGROUP_POLICY_LEADER_EXCLUDED),
        LeaderWorkerSetBuilder(NS, "surge").replicas(3).size(2).max_surge(1).max_unavailable(2),
        LeaderWorkerSetBuilder(NS, "hash").replicas(2).size(2).group_identity(c.GROUP_IDENTITY_HASH),
        LeaderWorkerSetBuilder(NS, "no-leader").replicas(1).size(2).no_leader_template(),
        LeaderWorkerSetBuilder(NS, "rolling").replicas(3).size(2),
    ]  # fmt: skip
    return sets


def server_version(cluster: LocalCluster) -> str:
    info = RestClient.from_kubeconfig(cluster.kubeconfig).get("/version")
    assert info is not None
    return str(info["gitVersion"])


async def test_upgrading_the_control_plane_through_the_window_restarts_no_group(
    upgrading: tuple[LocalCluster, KubeClient],
) -> None:
    cluster, api = upgrading
    assert server_version(cluster) == WINDOW[0]
    await api.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    sets = every_identity_and_policy()
    for builder in sets:
        await create(api, builder.obj())
    ds = DisaggregatedSetBuilder(NS, "pd").role("prefill", 2, size=2).role("decode", 1).obj()
    await api.create(DISAGGREGATEDSETS, ds)
    for builder in sets:
        lws = builder.obj()
        await expect_groups_available(api, NS, lws["spec"]["replicas"], name=lws["metadata"]["name"])
    await expect_ds_available(api, NS, {"prefill": 2, "decode": 1}, name="pd")
    before = await unchanged.settled(api, NS)
    steps = 0
    for step, version in enumerate(WINDOW[1:], start=1):
        await asyncio.to_thread(cluster.upgrade_control_plane, build.ensure_binaries(version))
        assert server_version(cluster) == version
        # The positive sign first: the new kube-controller-manager, kube-scheduler and our manager
        # bring a fresh set up; then nothing else moved (checked over a few seconds).
        await unchanged.expect_quiet_takeover(api, NS, before, f"probe-{versions.minor_of(version)[3:]}")
        # A rolling update still completes on the upgraded control plane.
        await update_worker_image(
            api, NS, f"docker.io/nginxinc/nginx-unprivileged:1.{27 + step}", name="rolling"
        )

        async def rolled() -> bool:
            status = (await api.get(LEADERWORKERSETS, NS, "rolling")).get("status") or {}
            return bool(status.get("updatedReplicas") == 3 and status.get("readyReplicas") == 3)

        await eventually(rolled, timeout=LONG_TIMEOUT)
        await expect_groups_available(api, NS, 3, name="rolling")
        after = await unchanged.settled(api, NS)
        # Only "rolling" moved, by its own update.
        assert unchanged.without(after, "rolling") == unchanged.without(before, "rolling"), unchanged.diff(
            unchanged.without(before, "rolling"), unchanged.without(after, "rolling")
        )
        before = after
        steps += 1
    assert steps == len(WINDOW) - 1
