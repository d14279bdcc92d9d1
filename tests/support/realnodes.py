"""Support for the tests on real nodes (docs/real-nodes.md): the manager image, the chart installed
as a user installs it, and the probe workload's HTTP endpoints (reached at pod addresses, which the
host routes to the nodes)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset import __version__
from leaderworkerset.api import constants as c
from leaderworkerset.devcluster import build, tools, versions
from leaderworkerset.devcluster.cluster import ClusterOptions, LocalCluster
from leaderworkerset.devcluster.realnodes import binaries, images
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import DEPLOYMENTS, LEADERWORKERSETS, PODS
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.builders.probe import probe_pod_spec
from tests.support.objects import labels

REPO = Path(__file__).resolve().parents[2]
MANAGER_REPOSITORY = "lws.local/lws-python"
MANAGER_TAG = f"v{__version__}"
MANAGER_IMAGE = f"{MANAGER_REPOSITORY}:{MANAGER_TAG}"
PROBE_V2 = "lws.local/probe:v2"
# Upstream's manager under the name its own chart pulls (charts/lws of the module, values.yaml).
UPSTREAM_REPOSITORY = "registry.k8s.io/lws/lws"
UPSTREAM_IMAGE = f"{UPSTREAM_REPOSITORY}:{tools.UPSTREAM_LWS.version}"
RELEASE = "lws"
NAMESPACE = "lws-system"
MANAGER_DEPLOYMENT = "lws-controller-manager"
# Two manager replicas fit on the two small nodes beside the probe workload.
SMALL_REQUESTS = ("resources.requests.cpu=100m", "resources.requests.memory=128Mi")
# What the image is built from: a change to any of these builds a new one.
_IMAGE_INPUTS = (
    "src",
    "pyproject.toml",
    "uv.lock",
    "hack/build-image.sh",
    "hack/lib/debian-image.sh",
    "hack/image-contract.toml",
)


# The real-node suites beyond the short journey that `make test` runs, chosen with LWS_REAL_NODES
# (a comma-separated list, or `all`): the probe workload's, and the Ray and JAX examples' (the
# test_workload* modules of tests/e2e/realnodes; docs/real-nodes.md).
SUITES = ("probe", "workloads")


def chosen_suites() -> set[str]:
    """The suites LWS_REAL_NODES names; an unknown name is an error naming the known ones."""
    chosen = {n.strip() for n in os.environ.get("LWS_REAL_NODES", "").split(",") if n.strip()}
    if "all" in chosen:
        return set(SUITES)
    unknown = sorted(chosen - set(SUITES))
    if unknown:
        raise ValueError(f"LWS_REAL_NODES: unknown suite(s) {unknown}; known: all, {', '.join(SUITES)}")
    return chosen


def benchmark_cluster(name: str, count: int, archives: Sequence[Path]) -> LocalCluster:
    """A cluster of `count` real nodes with `archives` imported, for a benchmark (benchmarks/): its
    processes die with the benchmark's; the caller starts and stops it."""
    options = ClusterOptions(
        nodes=0,
        real_nodes=count,
        node_images=tuple(archives),
        die_with_parent=True,
        supervise=True,
        start_timeout=240,
    )
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-bench-{name}-"))
    return LocalCluster(f"bench-{name}", workdir, build.ensure_binaries(), options)


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("REAL NODES NEED ROOT: network namespaces, mounts and cgroups (docs/real-nodes.md)")
    unavailable = binaries.unavailable_reason()
    if unavailable is not None:
        pytest.skip(f"REAL NODES UNAVAILABLE: {unavailable}")


def _source_digest() -> str:
    digest = hashlib.sha256()
    for top in _IMAGE_INPUTS:
        root = REPO / top
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            if "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(REPO)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def manager_image_archive() -> Path:
    """The manager's image as hack/build-image.sh builds it (once per source tree, cached), packed for
    `ctr images import` under MANAGER_IMAGE."""
    cache = versions.cache_root() / "images" / f"lws-{_source_digest()}"
    archive = cache / "lws.tar"
    if archive.is_file():
        return archive
    cache.mkdir(parents=True, exist_ok=True)
    build = subprocess.run(
        [str(REPO / "hack" / "build-image.sh"), str(cache / "image")],
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode != 0:
        raise RuntimeError(f"hack/build-image.sh failed:\n{build.stdout[-2000:]}\n{build.stderr[-2000:]}")
    images.archive_layout(cache / "image" / "oci", MANAGER_IMAGE, archive)
    return archive


def probe_v2_archive() -> Path:
    """The probe under a second tag, for a rolling update from PROBE_IMAGE to PROBE_V2."""
    bindir = binaries.ensure_node_binaries()
    spec = images.ImageSpec(ref=PROBE_V2, binary=bindir / "probe", entrypoint=("/probe",))
    return images.build_archive(spec, versions.cache_root() / "images" / "probe-v2.tar")


def upstream_image_archive() -> Path:
    """Upstream's manager image as its Dockerfile lays it out (the static binary as /manager, run as
    65532), built from the `sigs.k8s.io/lws` module at tools.UPSTREAM_LWS.version: the other side of
    a swap on real nodes."""
    binary = tools.ensure_tool(tools.UPSTREAM_LWS)
    spec = images.ImageSpec(ref=UPSTREAM_IMAGE, binary=binary, entrypoint=("/manager",))
    return images.build_archive(
        spec, versions.cache_root() / "images" / f"lws-upstream-{tools.UPSTREAM_LWS.version}.tar"
    )


def upstream_helm_install(cluster: LocalCluster) -> None:
    """`helm install` of upstream's own chart (from the module) with upstream's image, as upstream's
    install guide tells a user; the image is already on the nodes, so it is never pulled."""
    chart = tools.module_dir("sigs.k8s.io/lws", tools.UPSTREAM_LWS.version) / "charts" / "lws"
    values = [
        f"image.manager.repository={UPSTREAM_REPOSITORY}",
        f"image.manager.tag={tools.UPSTREAM_LWS.version}",
        "image.manager.pullPolicy=IfNotPresent",
        "enableDisaggregatedSet=true",
        *SMALL_REQUESTS,
    ]
    _install_chart(cluster, chart, values)


def helm(cluster: LocalCluster, *args: str) -> str:
    proc = subprocess.run(
        [str(tools.ensure_tool(tools.HELM)), f"--kubeconfig={cluster.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def helm_install(cluster: LocalCluster, *sets: str) -> None:
    """`helm install` of charts/lws with the built image, as docs/install.md tells a user."""
    values = [
        f"image.manager.repository={MANAGER_REPOSITORY}",
        f"image.manager.tag={MANAGER_TAG}",
        "enableDisaggregatedSet=true",
        *SMALL_REQUESTS,
        *sets,
    ]
    _install_chart(cluster, REPO / "charts" / "lws", values)


def _install_chart(cluster: LocalCluster, chart: Path, values: list[str]) -> None:
    sets = (f"--set={v}" for v in values)
    helm(cluster, "install", RELEASE, str(chart), f"--namespace={NAMESPACE}", "--create-namespace", *sets)


async def manager_available(api: KubeClient, replicas: int = 2, image: str = MANAGER_IMAGE) -> bool:
    """The chart's manager Deployment runs `image` with `replicas` updated, Available pods."""
    deployment = await api.get_or_none(DEPLOYMENTS, NAMESPACE, MANAGER_DEPLOYMENT)
    if deployment is None:
        return False
    containers = deployment["spec"]["template"]["spec"]["containers"]
    status = deployment.get("status") or {}
    available, updated = int(status.get("availableReplicas") or 0), int(status.get("updatedReplicas") or 0)
    return containers[0]["image"] == image and available >= replicas and updated >= replicas


async def admits(api: KubeClient, ns: str) -> bool:
    """Whether a LeaderWorkerSet create gets through the webhooks now (a server-side dry run). A
    manager whose readiness does not cover its webhook server (upstream's) is Available before
    this holds."""
    lws = probe_lws(ns, "admission-check", replicas=0, size=2)
    try:
        await api.request("POST", LEADERWORKERSETS.collection_path(ns), body=lws, params={"dryRun": "All"})
    except ApiStatusError:
        return False
    return True


def pod_http(ip: str, path: str, method: str = "GET") -> Any:
    """One request to a probe pod's HTTP port; the decoded JSON answer, or the text."""
    request = urllib.request.Request(
        f"http://{ip}:8080{path}", method=method, data=b"" if method == "POST" else None
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        body = answer.read().decode()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return body


Obj = dict[str, Any]


def probe_lws(
    ns: str,
    name: str,
    *,
    replicas: int,
    size: int,
    worker_env: dict[str, str] | None = None,
    leader_env: dict[str, str] | None = None,
    **worker: Any,
) -> Obj:
    """An LWS of the probe workload; `worker` goes to the workers' probe_pod_spec (image, memory_limit)."""
    return (
        LeaderWorkerSetBuilder(ns, name)
        .replicas(replicas)
        .size(size)
        .leader_template(probe_pod_spec(env=leader_env))
        .worker_template({"spec": probe_pod_spec(env=worker_env, **worker)})
        .obj()
    )


async def lws_available(api: KubeClient, ns: str, name: str) -> bool:
    lws = await api.get(LEADERWORKERSETS, ns, name)
    conditions = {x["type"]: x["status"] for x in (lws.get("status") or {}).get("conditions") or []}
    return conditions.get(c.CONDITION_AVAILABLE) == c.CONDITION_TRUE


async def group_pods(api: KubeClient, ns: str, name: str) -> dict[str, list[Obj]]:
    pods = await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={name}")
    groups: dict[str, list[Obj]] = {}
    for pod in pods:
        groups.setdefault(labels(pod)[c.LABEL_GROUP_INDEX], []).append(pod)
    return groups
