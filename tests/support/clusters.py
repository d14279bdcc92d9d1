"""Session-wide local clusters for the test suite (one per xdist worker)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import build
from leaderworkerset.devcluster.cluster import ClusterError, ClusterOptions, LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client

STARTED: list[LocalCluster] = []


def start(shape: str, worker: str, *, workload_api: bool = False, nodes: int | None = None) -> LocalCluster:
    """`workload_api` serves scheduling.k8s.io/v1beta1 (a separate cluster: `test-<shape>-wl-<worker>`)."""
    bindir = build.ensure_binaries()
    tag = f"{shape}-wl" if workload_api else shape
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-test-{tag}-{worker}-"))
    options = ClusterOptions(
        shape="full" if shape == "full" else "apiserver",
        nodes=nodes if nodes is not None else int(os.environ.get("LWS_TEST_NODES", "6")),
        die_with_parent=True,
        supervise=True,
    )
    if workload_api:
        options = with_workload_api(options)
    cluster = LocalCluster(f"test-{tag}-{worker}", workdir, bindir, options)
    cluster.start()
    STARTED.append(cluster)
    return cluster


def with_workload_api(options: ClusterOptions) -> ClusterOptions:
    """The options with the 1.37 Workload API; on an older cluster (LWS_KUBERNETES_VERSION) the test
    is skipped, saying why: that API does not exist there (the refusal itself is tested separately)."""
    try:
        return options.with_workload_api()
    except ClusterError as err:
        pytest.skip(str(err))


def stop(cluster: LocalCluster) -> None:
    cluster.stop()
    if cluster in STARTED:
        STARTED.remove(cluster)
    if not os.environ.get("LWS_KEEP_TEST_CLUSTERS"):
        import shutil

        shutil.rmtree(cluster.workdir, ignore_errors=True)


def worker_id(request: pytest.FixtureRequest) -> str:
    return str(getattr(request.config, "workerinput", {}).get("workerid", "main"))


def client_for(cluster: LocalCluster) -> AsyncClient:
    return AsyncClient(config=KubeConfig.from_file(str(cluster.kubeconfig)), field_manager="lws-tests")


async def fresh_namespace(client: AsyncClient, request: pytest.FixtureRequest) -> str:
    """A new namespace named after the test (readable in logs), with a random suffix."""
    base = "".join(ch if ch.isalnum() else "-" for ch in request.node.name.lower())[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    await client.create(Namespace(metadata=ObjectMeta(name=name)))
    return name


async def namespace_in(cluster: LocalCluster, request: pytest.FixtureRequest) -> str:
    """A fresh namespace (see `fresh_namespace`) in `cluster`, through a client of its own."""
    kube = client_for(cluster)
    try:
        return await fresh_namespace(kube, request)
    finally:
        await kube.close()


def own(request: pytest.FixtureRequest, name: str, options: ClusterOptions) -> Iterator[LocalCluster]:
    """A module's own cluster (for a fixture to `yield from`): for tests that decide which manager runs,
    with which configuration or feature gates, so the session's shared cluster and manager stay out."""
    workdir = Path(tempfile.mkdtemp(prefix=f"lws-test-{name}-"))
    cluster = LocalCluster(f"test-{name}-{worker_id(request)}", workdir, build.ensure_binaries(), options)
    cluster.start()
    STARTED.append(cluster)
    yield cluster
    stop(cluster)


async def api_with_crds(cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """A dict-level client of `cluster` once our CRDs are installed (for a fixture to `async for`)."""
    kube = client_for(cluster)
    try:
        await install_crds(kube)
    finally:
        await kube.close()
    api = new_client(ClientOptions(kubeconfig=str(cluster.kubeconfig), field_manager="lws-e2e-tests"))
    yield api
    await api.close()
