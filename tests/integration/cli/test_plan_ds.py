"""`lws plan` for a DisaggregatedSet against the real API server (apiserver shape).

The DS controller is not part of this branch, so the test plays it: it creates the child
LeaderWorkerSets of slice 0 with the controller's own builder (`build_child`) and writes their
status. What is checked is the plan command's read path: the live DS, the dry-run of the new
spec, the owned children, and the change kind decided by the DS revision.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient

from leaderworkerset.cli.plan import PlanInputError, build
from leaderworkerset.core.disaggregated.children import build_child
from leaderworkerset.core.disaggregated.revision import disaggregated_revision
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DISAGGREGATEDSETS, LEADERWORKERSETS
from tests.support.builders import ds, ds_role
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
FILES = itertools.count()


def gpu_role(name: str, replicas: int, gpus: int, image: str = "registry.example/old:1") -> Obj:
    container = {
        "name": "c",
        "image": image,
        "resources": {"limits": {GPU: str(gpus)}, "requests": {GPU: str(gpus)}},
    }
    return ds_role(
        name,
        replicas,
        leaderWorkerTemplate={"size": 1, "workerTemplate": {"spec": {"containers": [container]}}},
    )


def pd(ns: str, prefill: Obj, decode: Obj) -> Obj:
    obj = ds("pd", prefill, decode)
    obj["metadata"]["namespace"] = ns
    return obj


@pytest.fixture
async def api(apiserver_cluster: LocalCluster, kube: AsyncClient) -> Any:
    await install_crds(kube)
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    yield client
    await client.close()


async def live_ds_with_children(api: KubeClient, ns: str) -> Obj:
    body = pd(ns, gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2))

    async def create_when_served() -> Obj:
        try:
            return await api.create(DISAGGREGATEDSETS, body, ns)
        except ApiStatusError as err:
            if err.code == 429:  # a CRD just installed answers 429 until its storage is ready
                raise AssertionError(str(err)) from err
            raise

    live = await eventually(create_when_served)
    revision = disaggregated_revision(live["spec"]["roles"])
    for role in live["spec"]["roles"]:
        replicas = role["spec"]["replicas"]
        child = await api.create(
            LEADERWORKERSETS, build_child(live, role, 0, revision, replicas=replicas, initial=replicas), ns
        )
        status = {"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas}
        await api.patch_status(LEADERWORKERSETS, ns, child["metadata"]["name"], {"status": status})
    return live


async def plan_of(cluster: LocalCluster, tmp_path: Path, manifest: Obj) -> Any:
    path = tmp_path / f"ds-{next(FILES)}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return await build(ClientOptions(kubeconfig=str(cluster.kubeconfig)), path, None)


async def test_ds_plan_reads_the_live_children(
    api: KubeClient, namespace: str, apiserver_cluster: LocalCluster, tmp_path: Path
) -> None:
    await live_ds_with_children(api, namespace)
    new = pd(
        namespace,
        gpu_role("prefill", 2, 1, "registry.example/new:2"),
        gpu_role("decode", 4, 2, "registry.example/new:2"),
    )
    plan = await plan_of(apiserver_cluster, tmp_path, new)
    assert plan.change == "rollout"
    # Started from the 2 + 4 live replicas read from the children, ended with 6 new ones.
    assert (plan.steps[-1].updated, plan.steps[-1].old) == (6, 0)
    assert plan.steps[0].up == ("prefill +1", "decode +1")
    assert plan.peak_extra_accelerators == {GPU: 3}
    # The apiserver shape has no nodes: nothing is free, so the surge is a warning.
    assert plan.free_accelerators == {}
    # Each role's surge waits for capacity (naming the opt-in that would replace in place), and the
    # peak that does not fit is a warning of its own.
    waits = [w for w in plan.warnings if "the rollout waits for capacity" in w]
    assert sorted(w.split(":")[0] for w in waits) == ["role decode", "role prefill"], plan.warnings
    assert [w for w in plan.warnings if w not in waits] == [
        "needs 3 more nvidia.com/gpu than the groups hold now, the eligible nodes have 0 free"
    ]

    scaled = await plan_of(
        apiserver_cluster, tmp_path, pd(namespace, gpu_role("prefill", 3, 1), gpu_role("decode", 4, 2))
    )
    assert scaled.change == "scale only"
    assert "prefill 2 → 3" in scaled.summary

    startup = pd(namespace, gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2))
    startup["spec"]["roles"][0]["spec"]["startupPolicy"] = "LeaderReady"
    assert (await plan_of(apiserver_cluster, tmp_path, startup)).change == "no rollout"


async def test_plan_of_a_missing_object_names_it(
    namespace: str, apiserver_cluster: LocalCluster, tmp_path: Path, api: KubeClient
) -> None:
    with pytest.raises(PlanInputError, match=f"DisaggregatedSet {namespace}/pd does not exist"):
        await plan_of(
            apiserver_cluster, tmp_path, pd(namespace, gpu_role("prefill", 2, 1), gpu_role("decode", 4, 2))
        )
