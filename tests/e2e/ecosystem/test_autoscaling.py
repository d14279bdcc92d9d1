"""kube-controller-manager's own HPA controller scaling LeaderWorkerSets and a DisaggregatedSet role on
real resource metrics, on the full local cluster.

The metrics are real scrapes: kwok simulates each node's kubelet `/metrics/resource` (CPU per
container from the pod's `kwok.x-k8s.io/usage-cpu` annotation, 1m otherwise), metrics-server
(built from its Go module) scrapes it and serves `metrics.k8s.io` through kube-apiserver's
aggregation layer, and the HPA controller reads that (devcluster/metrics.py). Putting load on a pod
is annotating it; nothing else is simulated. The HPA scales through the `/scale` subresource, with
the CRD's `labelSelectorPath` telling it which pods to average over: the leaders of the set
(`status.hpaPodSelector`) or of the role (the scaler's `status.selector`).

* An HPA on CPU scales an LWS 2 → 5 groups under load and back to 2 without it; the scale-down
  removes the highest group indices, the first groups keep their pods (as upstream: the leader
  StatefulSet scales down from its highest ordinal).
* The same through a DisaggregatedSet role's DisaggregatedSetRoleScaler, 1 → 3 → 1.
* Upstream's own HPA manifests (examples/ and samples/) applied unchanged with the LWS they target.

The behaviour stanzas of our own HPAs only drop the stabilization windows (5 minutes for scale-down
by default) so that CI waits for the metrics, not for the clock; the controller-manager keeps its
default 15 s sync period. Upstream's manifests keep their defaults, so only their scale-up is
waited for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.components import USAGE_CPU_ANNOTATION
from leaderworkerset.devcluster.nodes import default_nodes
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.resources import DS_ROLE_SCALERS, LEADERWORKERSETS, PODS, ResourceRef
from tests.e2e.conftest import MANAGERS
from tests.integration.disaggregatedset.helpers import create as create_ds
from tests.support import upstream
from tests.support.builders import DisaggregatedSetBuilder, LeaderWorkerSetBuilder
from tests.support.builders.disaggregatedset import DS_NAME
from tests.support.ecosystem import EcosystemEnv, ecosystem_env
from tests.support.expect import expect_ds_available, expect_groups_available
from tests.support.objects import group_of, is_leader, uid
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

Obj = dict[str, Any]
HPAS = ResourceRef("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")
CPU_REQUEST = "100m"
BUSY, IDLE = "200m", "1m"  # 200 % and 1 % of the request
# Each phase waits for: a scrape (10 s resolution, two points for a rate), an HPA sync (15 s), the
# groups becoming ready; under CI load several times that.
SCALE_TIMEOUT = max(LONG_TIMEOUT, 180.0)


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[EcosystemEnv]:
    async with ecosystem_env("hpa", default_nodes(4), metrics=True, managers=MANAGERS) as started:
        yield started


def cpu_hpa(ns: str, name: str, target: Obj, low: int, high: int) -> Obj:
    """An HPA on average CPU utilization (50 %) with no stabilization windows."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "scaleTargetRef": target,
            "minReplicas": low,
            "maxReplicas": high,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                "scaleDown": {
                    "stabilizationWindowSeconds": 0,
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
                },
            },
        },
    }


async def load(api: KubeClient, ns: str, selector: str, usage: str) -> list[str]:
    """Every pod `selector` matches now uses `usage` CPU (kwok's usage annotation); their names."""
    pods = await api.list(PODS, ns, label_selector=selector)
    for pod in pods:
        patch = {"metadata": {"annotations": {USAGE_CPU_ANNOTATION: usage}}}
        await api.merge_patch(PODS, ns, pod["metadata"]["name"], patch)
    return [p["metadata"]["name"] for p in pods]


async def expect_hpa_measures(
    api: KubeClient, ns: str, name: str, *, replicas: int | None, below: int = 1000, above: int = -1
) -> int:
    """The HPA read a CPU utilization from metrics.k8s.io strictly between `above` and `below` (and
    wants `replicas`); that utilization. The bounds are waited for: a status written before the load
    changed may still be there."""

    async def measured() -> int:
        hpa = await api.get(HPAS, ns, name)
        status = hpa.get("status") or {}
        current = [m for m in status.get("currentMetrics") or [] if m.get("type") == "Resource"]
        assert current, f"no metric read yet: {status.get('conditions')}"
        utilization = current[0]["resource"]["current"].get("averageUtilization")
        assert utilization is not None, current
        assert above < utilization < below, f"utilization {utilization} not in ({above}, {below})"
        if replicas is not None:
            assert status.get("desiredReplicas") == replicas, (
                f"desired {status.get('desiredReplicas')}: {status}"
            )
        return int(utilization) + 1  # truthy even at 0 %

    return await eventually(measured, timeout=SCALE_TIMEOUT) - 1


async def leader_uids(api: KubeClient, ns: str, selector: str) -> dict[int, str]:
    pods = await api.list(PODS, ns, label_selector=selector)
    return {group_of(p): uid(p) for p in pods if is_leader(p) and not p["metadata"].get("deletionTimestamp")}


async def expect_lws_replicas(api: KubeClient, ns: str, name: str, replicas: int) -> None:
    async def scaled() -> bool:
        lws = await api.get(LEADERWORKERSETS, ns, name)
        assert lws["spec"]["replicas"] == replicas, f"spec.replicas {lws['spec']['replicas']}"
        return True

    await eventually(scaled, timeout=SCALE_TIMEOUT)
    await expect_groups_available(api, ns, replicas, name)


async def test_an_hpa_on_cpu_scales_a_leaderworkerset_between_2_and_5_groups(env: EcosystemEnv) -> None:
    api, ns = env.api, await env.namespace("hpa-lws")
    name = "served"
    lws = (
        LeaderWorkerSetBuilder(ns, name)
        .replicas(2)
        .size(2)
        .leader_resources({"cpu": CPU_REQUEST})
        .worker_resources({"cpu": CPU_REQUEST})
        .obj()
    )
    await api.create(LEADERWORKERSETS, lws, ns)
    await expect_groups_available(api, ns, 2, name)
    target = {"apiVersion": c.LWS_API_VERSION, "kind": c.LWS_KIND, "name": name}
    await api.create(HPAS, cpu_hpa(ns, name, target, 2, 5), ns)

    # The HPA reads the leaders only (the LWS's hpaPodSelector): idle, it keeps the minimum.
    selector = (await api.get(LEADERWORKERSETS, ns, name))["status"]["hpaPodSelector"]
    assert selector == f"{c.LABEL_SET_NAME}={name},{c.LABEL_WORKER_INDEX}=0"
    await expect_hpa_measures(api, ns, name, replicas=2, below=50)
    first = await leader_uids(api, ns, f"{c.LABEL_SET_NAME}={name}")
    assert sorted(first) == [0, 1]

    busy = await load(api, ns, selector, BUSY)
    assert sorted(busy) == [f"{name}-0", f"{name}-1"]
    await expect_lws_replicas(api, ns, name, 5)  # 200 % on 2 leaders asks for 8, capped at 5
    assert sorted(await leader_uids(api, ns, f"{c.LABEL_SET_NAME}={name}")) == [0, 1, 2, 3, 4]

    await load(api, ns, selector, IDLE)
    await expect_lws_replicas(api, ns, name, 2)
    # The highest groups went; groups 0 and 1 are the very pods they were.
    assert await leader_uids(api, ns, f"{c.LABEL_SET_NAME}={name}") == first
    await expect_hpa_measures(api, ns, name, replicas=2, below=50)


async def test_an_hpa_scales_a_disaggregatedset_role_through_its_scaler_between_1_and_3(
    env: EcosystemEnv,
) -> None:
    api, ns = env.api, await env.namespace("hpa-ds")
    body = DisaggregatedSetBuilder(ns).role("prefill", 1).role("decode", None).external("decode").obj()
    for role in body["spec"]["roles"]:
        container = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": CPU_REQUEST}}
    await create_ds(api, body)
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 1})  # a fresh External role seeds 1
    scaler = f"{DS_NAME}-decode"
    target = {"apiVersion": c.DS_API_VERSION, "kind": c.DSRS_KIND, "name": scaler}
    await api.create(HPAS, cpu_hpa(ns, scaler, target, 1, 3), ns)

    async def scaler_selector() -> str:
        selector = ((await api.get(DS_ROLE_SCALERS, ns, scaler)).get("status") or {}).get("selector")
        assert selector, "the scaler has no selector yet"
        return str(selector)

    selector = await eventually(scaler_selector)
    await expect_hpa_measures(api, ns, scaler, replicas=1, below=50)
    first = await leader_uids(api, ns, selector)
    assert len(first) == 1

    busy = await load(api, ns, selector, BUSY)
    assert len(busy) == 1  # the role's one leader; prefill's pods are not the scaler's
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 3})  # 200 % asks for 4, capped at 3
    scale = await api.get(DS_ROLE_SCALERS, ns, f"{scaler}/scale")
    assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (3, 3)
    assert len(await leader_uids(api, ns, selector)) == 3

    await load(api, ns, selector, IDLE)
    await expect_ds_available(api, ns, {"prefill": 1, "decode": 1})
    # The role's child LWS dropped its highest groups: the first group is the very pod it was.
    assert await leader_uids(api, ns, selector) == first


# ----- upstream's HPA manifests, unchanged ----------------------------------------------------
# Each targets `leaderworkerset-sample`; the plain LWS of that name in the same folder.
TARGETS = {"examples": "sample_lws.yaml", "samples": "leaderworkerset_v1_leaderworkerset.yaml"}


def upstream_hpas() -> list[Any]:
    found = []
    for folder, target in TARGETS.items():
        for path in upstream.files(folder):
            hpas = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == HPAS.kind]
            if hpas:
                (hpa,) = hpas
                (lws,) = [d for d in yaml.safe_load_all((path.parent / target).read_text()) if d]
                found.append(pytest.param((hpa, lws), id=f"{folder}/{path.name}"))
    return upstream.params(found, minimum=len(TARGETS), what="upstream HPA manifests")


UPSTREAM_HPAS = upstream_hpas()


def test_every_upstream_hpa_manifest_is_covered() -> None:
    assert [p.id for p in UPSTREAM_HPAS] == [
        "examples/sample_horizontal-pod-autoscaler.yaml",
        "samples/hpaexample.yaml",
    ]


@pytest.mark.parametrize("case", UPSTREAM_HPAS)
async def test_upstream_hpa_scales_its_leaderworkerset_up_on_load(env: EcosystemEnv, case: Any) -> None:
    upstream.check_case(case)
    hpa, lws = case
    api, ns = env.api, await env.namespace("hpa-upstream")
    name, low, high = lws["metadata"]["name"], hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == name
    await api.create(LEADERWORKERSETS, lws, ns)
    await expect_groups_available(api, ns, lws["spec"]["replicas"], name)
    await api.create(HPAS, hpa, ns)
    hpa_name = hpa["metadata"]["name"]

    target = hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"]
    if target >= 10:
        # Idle pods (1m of a 50m request, 2-3 %) are well below it: the set stays at the minimum.
        await expect_hpa_measures(api, ns, hpa_name, replicas=low, below=target)
    else:
        # samples/hpaexample.yaml targets 2 %: an idle 1m of a 50m request already meets it, so
        # this HPA may scale up before any load; only that it measures is checked here.
        await expect_hpa_measures(api, ns, hpa_name, replicas=None)
    selector = (await api.get(LEADERWORKERSETS, ns, name))["status"]["hpaPodSelector"]
    await load(api, ns, selector, "100m")  # 200 % of the request
    await expect_lws_replicas(api, ns, name, high)
    await expect_hpa_measures(api, ns, hpa_name, replicas=high, above=target)
