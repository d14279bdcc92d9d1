"""llm-d's chart (`llm-d-modelservice` v0.4.12, rendered into ../shared/upstream/ecosystem/llm-d/)
against our controller on the full local cluster, applied unchanged with `kubectl apply` into a fresh
namespace, on kwok nodes with 8 GPUs, 64 CPUs and their own hostname each.

* Every LeaderWorkerSet of every rendering becomes Available, and its pods carry what the chart
  relies on: the LWS_* variables at the front of every container *and* of the routing-proxy native
  sidecar (an init container with `restartPolicy: Always`, kept as such), no TPU variables (GPU
  pods), the chart's own env, GPU requests, service account and volumes untouched; with
  `subGroupPolicy` the subgroup labels and, from the `subgroup-exclusive-topology` annotation, the
  required pod affinity / anti-affinity on the subgroup key, which the scheduler honours: each
  subgroup on one node, no two subgroups on a node.
* A model upgrade (a new vLLM image in the same manifests, `kubectl apply` again) rolls each set
  group by group, highest group first, never more than one group down, in the order `lws plan`
  printed for it beforehand.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.nodes import HOSTNAME
from leaderworkerset.runtime.resources import LEADERWORKERSETS, PODS, STATEFULSETS
from tests.e2e.conftest import MANAGERS
from tests.support import upstream
from tests.support.cli import kubectl, run_lws
from tests.support.ecosystem import EcosystemEnv, ecosystem_env, gpu_nodes
from tests.support.expect import expect_groups_available, expect_valid_pods
from tests.support.lwsapi import leader_statefulset_revision_key, pods_by_name
from tests.support.objects import group_of, is_leader, is_ready, labels
from tests.support.wait import LONG_TIMEOUT, eventually
from tests.support.watch import Watch

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
FOLDER = "ecosystem/llm-d"
VLLM_IMAGE = "ghcr.io/llm-d/llm-d-cuda:latest"
UPGRADED_IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.4.1"
UPGRADE_FILE = "pd-multinode-dp.yaml"


def renderings() -> list[Any]:
    """The chart's renderings (2: prefill/decode with data parallelism, and decode with exclusive
    subgroups); fewer turns into one case that fails (CI) or skips, never an empty set."""
    found = [pytest.param(path, id=path.name) for path in upstream.files(FOLDER)]
    return upstream.params(found, minimum=2, what="llm-d renderings")


RENDERINGS = renderings()


def documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def leaderworkersets(path: Path) -> list[Obj]:
    return [doc for doc in documents(path) if doc["kind"] == c.LWS_KIND]


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[EcosystemEnv]:
    for param in RENDERINGS:  # no cluster for absent data: fail (CI) or skip first
        upstream.check_case(param.values[0])
    # Every rendering stays up in its namespace: 2 x 20 GPUs (pd-multinode-dp, twice) + 16 GPUs and
    # 20 pods of 16 CPUs. Nodes with room for twice that, so that the scheduler's spreading of the
    # 1-GPU prefill pods never leaves a 4-GPU pod without a node.
    async with ecosystem_env("llmd", gpu_nodes(8, gpus=16, cpu="128"), managers=MANAGERS) as started:
        yield started


def subgroup_index(worker: int, size: int, subgroup_size: int) -> int:
    """A worker's subgroup index under the LeaderWorker policy (the chart's default)."""
    if (size - 1) % subgroup_size == 0 and size % subgroup_size != 0:
        return 0 if worker == 0 else (worker - 1) // subgroup_size
    return worker // subgroup_size


async def expect_chart_pods(env: EcosystemEnv, ns: str, lws: Obj) -> int:
    """What the chart relies on, on every pod of `lws`; returns how many pods were checked."""
    name = lws["metadata"]["name"]
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size, template = lwt["size"], lwt["workerTemplate"]["spec"]
    subgroup_size = (lwt.get("subGroupPolicy") or {}).get("subGroupSize")
    exclusive = (lws["metadata"].get("annotations") or {}).get(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY)
    pods = await pods_by_name(env.api, ns, name)
    for pod_name, pod in pods.items():
        worker = int(labels(pod)[c.LABEL_WORKER_INDEX])
        spec = pod["spec"]
        lws_env = [c.ENV_LWS_LEADER_ADDRESS, c.ENV_LWS_GROUP_SIZE, c.ENV_LWS_WORKER_INDEX]
        for container in spec["containers"] + spec.get("initContainers", []):
            names = [e["name"] for e in container.get("env") or []]
            assert names[:3] == lws_env, f"{pod_name}/{container['name']} env {names}"
            assert not [n for n in names if n.startswith("TPU_")], f"{pod_name}: TPU variables on a GPU pod"
        # The chart's containers, as rendered: the native sidecar stays an init container that
        # restarts (`restartPolicy: Always`), the vLLM container keeps its own variables after ours.
        assert [i["name"] for i in spec.get("initContainers", [])] == [
            i["name"] for i in template.get("initContainers", [])
        ]
        for rendered, live in zip(
            template.get("initContainers", []), spec.get("initContainers", []), strict=True
        ):
            assert live.get("restartPolicy") == rendered["restartPolicy"] == "Always", live
            assert live["securityContext"] == rendered["securityContext"]
            assert live["args"] == rendered["args"]
        vllm = spec["containers"][0]
        # (by name and value: the API server defaults a fieldRef's apiVersion)
        rendered_env = [(e["name"], e.get("value")) for e in template["containers"][0]["env"]]
        live_env = [(e["name"], e.get("value")) for e in vllm["env"][3:]]
        assert live_env == rendered_env, f"{pod_name}: the chart's env changed"
        assert vllm["resources"]["requests"][GPU] == template["containers"][0]["resources"]["requests"][GPU]
        assert spec["serviceAccountName"] == template["serviceAccountName"]
        assert {v["name"] for v in spec["volumes"]} >= {v["name"] for v in template["volumes"]}
        if subgroup_size is None:
            assert c.LABEL_SUBGROUP_INDEX not in labels(pod)
            continue
        annotations = pod["metadata"]["annotations"]
        assert annotations[c.ANNOTATION_SUBGROUP_SIZE] == str(subgroup_size)
        index = subgroup_index(worker, size, subgroup_size)
        leader = pod_name if worker == 0 else annotations[c.ANNOTATION_LEADER_NAME]
        key = hashlib.sha1(f"{leader}/{index}".encode()).hexdigest()
        assert labels(pod)[c.LABEL_SUBGROUP_INDEX] == str(index), pod_name
        assert labels(pod)[c.LABEL_SUBGROUP_KEY] == key, pod_name
        if exclusive:
            affinity = spec["affinity"]
            together = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            apart = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert together == [
                {
                    "labelSelector": {
                        "matchExpressions": [{"key": c.LABEL_SUBGROUP_KEY, "operator": "In", "values": [key]}]
                    },
                    "topologyKey": exclusive,
                }
            ], together
            assert apart == [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": c.LABEL_SUBGROUP_KEY, "operator": "Exists"},
                            {"key": c.LABEL_SUBGROUP_KEY, "operator": "NotIn", "values": [key]},
                        ]
                    },
                    "topologyKey": exclusive,
                }
            ], apart
    if subgroup_size and exclusive:
        nodes_of: dict[str, set[str]] = defaultdict(set)
        for pod in pods.values():
            nodes_of[labels(pod)[c.LABEL_SUBGROUP_KEY]].add(pod["spec"]["nodeName"])
        assert all(len(nodes) == 1 for nodes in nodes_of.values()), f"a subgroup split over nodes: {nodes_of}"
        placed = [next(iter(nodes)) for nodes in nodes_of.values()]
        assert len(set(placed)) == len(placed), f"two subgroups share a node: {nodes_of}"
        assert exclusive == HOSTNAME
    return len(pods)


async def apply(env: EcosystemEnv, ns: str, path: Path) -> None:
    await kubectl(env.cluster, "apply", "-n", ns, "-f", str(path))


@pytest.mark.parametrize("rendering", RENDERINGS)
async def test_every_leaderworkerset_of_the_chart_becomes_available_as_the_chart_expects(
    env: EcosystemEnv, rendering: Path
) -> None:
    upstream.check_case(rendering)
    ns = await env.namespace("llmd")
    sets = leaderworkersets(rendering)
    assert sets, f"{rendering.name} renders no LeaderWorkerSet"
    await apply(env, ns, rendering)
    checked = 0
    for lws in sets:
        name = lws["metadata"]["name"]
        replicas, size = lws["spec"]["replicas"], lws["spec"]["leaderWorkerTemplate"]["size"]
        await expect_groups_available(env.api, ns, replicas, name)
        await expect_valid_pods(env.api, ns, replicas, size, name)
        pods = await eventually(lambda lws=lws: expect_chart_pods(env, ns, lws), timeout=LONG_TIMEOUT)
        assert pods == replicas * size
        checked += pods
    # pd-multinode-dp: 2 sets x 2 groups x 2 pods; decode-subgroups-exclusive: 1 group x 4 pods.
    assert checked == {"pd-multinode-dp.yaml": 8, "decode-subgroups-exclusive.yaml": 4}[rendering.name]


def upgraded(path: Path, out: Path) -> Path:
    """The same manifests with the new model-server image (what a release upgrade renders)."""
    text = path.read_text()
    assert text.count(VLLM_IMAGE) == 2, "the rendering changed: expected the vLLM image twice"
    out.write_text(text.replace(VLLM_IMAGE, UPGRADED_IMAGE))
    return out


async def test_a_model_upgrade_rolls_out_group_by_group_as_lws_plan_says(
    env: EcosystemEnv, tmp_path: Path
) -> None:
    rendering = upstream.require(FOLDER, UPGRADE_FILE)
    ns = await env.namespace("llmd-upgrade")
    sets = leaderworkersets(rendering)
    names = [lws["metadata"]["name"] for lws in sets]
    await apply(env, ns, rendering)
    for lws in sets:
        await expect_groups_available(env.api, ns, lws["spec"]["replicas"], lws["metadata"]["name"])
    old_keys = {name: await leader_statefulset_revision_key(env.api, ns, name) for name in names}

    new_manifest = upgraded(rendering, tmp_path / "upgraded.yaml")
    planned: dict[str, list[tuple[int, int]]] = {}
    for lws in leaderworkersets(new_manifest):
        name = lws["metadata"]["name"]
        one = tmp_path / f"{name}.yaml"
        one.write_text(yaml.safe_dump(lws))
        result = await run_lws(env.cluster, "plan", "-f", str(one), "-n", ns, "-o", "json")
        assert result.code == 0, result.err
        plan = json.loads(result.out)
        assert plan["change"] == "rollout", plan
        replicas = lws["spec"]["replicas"]
        planned[name] = [(0, replicas)] + [(s["updated"], s["old"]) for s in plan["steps"]]
        # maxUnavailable 1, maxSurge 0 (the chart sets no strategy): one group at a time.
        assert planned[name] == [(0, 2), (1, 1), (2, 0)], planned[name]

    # Every leader pod change and every leader StatefulSet partition, per set, through watches.
    observed: dict[str, list[tuple[int, int]]] = {name: [] for name in names}
    updated_order: dict[str, list[int]] = {name: [] for name in names}
    partitions: dict[str, list[int]] = {name: [] for name in names}
    down_peak: dict[str, int] = dict.fromkeys(names, 0)

    # A group being recreated counts as old until its new leader exists (as in tests/e2e/test_plan.py).
    latest: dict[str, dict[int, str]] = {name: {} for name in names}

    def record_pods(pods: dict[str, Obj]) -> None:
        for name in names:
            leaders = {
                group_of(pod): pod
                for pod in pods.values()
                if labels(pod).get(c.LABEL_SET_NAME) == name
                and is_leader(pod)
                and not pod["metadata"].get("deletionTimestamp")
            }
            keys = latest[name]
            keys.update({g: labels(pod)[c.LABEL_TEMPLATE_REVISION_HASH] for g, pod in leaders.items()})
            old = old_keys[name]
            state = (sum(k != old for k in keys.values()), sum(k == old for k in keys.values()))
            if not observed[name] or observed[name][-1] != state:
                observed[name].append(state)
            for group, key in sorted(keys.items()):
                if key != old_keys[name] and group not in updated_order[name]:
                    updated_order[name].append(group)
            ready = sum(1 for pod in leaders.values() if is_ready(pod))
            down_peak[name] = max(down_peak[name], 2 - ready)

    def record_statefulsets(objects: dict[str, Obj]) -> None:
        for name in names:
            sts = objects.get(name)
            if sts is None:
                continue
            partition = ((sts["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}).get(
                "partition", 0
            )
            if not partitions[name] or partitions[name][-1] != partition:
                partitions[name].append(partition)

    async with Watch(env.api, PODS, ns, record_pods), Watch(env.api, STATEFULSETS, ns, record_statefulsets):
        await apply(env, ns, new_manifest)
        for lws in sets:
            name = lws["metadata"]["name"]
            await expect_groups_available(env.api, ns, lws["spec"]["replicas"], name)

            async def all_new(name: str = name) -> bool:
                pods = await pods_by_name(env.api, ns, name)
                images = {p["spec"]["containers"][0]["image"] for p in pods.values()}
                assert images == {UPGRADED_IMAGE}, images
                return True

            await eventually(all_new, timeout=LONG_TIMEOUT)

    for name in names:
        assert observed[name] == planned[name], f"{name}: observed {observed[name]}, planned {planned[name]}"
        assert updated_order[name] == [1, 0], f"{name}: groups updated in order {updated_order[name]}"
        # The leader StatefulSet's partition: 0 before, then it lets one group at a time through.
        assert partitions[name][0] == 0, f"{name}: {partitions[name]}"
        assert partitions[name][-2:] == [1, 0], f"{name}: {partitions[name]}"
        assert down_peak[name] == 1, f"{name}: {down_peak[name]} groups down at once"
    lws_objects = {name: await env.api.get(LEADERWORKERSETS, ns, name) for name in names}
    assert all(o["status"]["updatedReplicas"] == 2 for o in lws_objects.values())
