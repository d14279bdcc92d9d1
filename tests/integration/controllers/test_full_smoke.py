"""End-to-end smoke on the full local cluster: our controllers and pod webhook with the real
StatefulSet controller, garbage collector, scheduler and kwok nodes.

A 2x3 LeaderWorkerSet becomes Available; a container restart in one group (simulated kubelet
report) recreates exactly that group, and the set becomes Available again. A rolling update replaces
every group. An in-place update of a 2-group set reads the set from the caches only: no pod or
StatefulSet LIST after startup (the requests the controllers send are recorded).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster import chaos
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.devcluster.kube import RestClient
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.errors import ApiStatusError
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NAMESPACES, PODS, STATEFULSETS
from leaderworkerset.webhooks import certissue, certs
from leaderworkerset.webhooks.configurations import render_for_url
from leaderworkerset.webhooks.server import WebhookServer
from tests.support import clusters, expect, kubelet
from tests.support.builders import LeaderWorkerSetBuilder
from tests.support.inprocess import running_controllers
from tests.support.lwsapi import pods_by_name, update_worker_image
from tests.support.requestlog import RequestLog
from tests.support.wait import LONG_TIMEOUT, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.full]

SESSION = uuid.uuid4().hex[:8]
SELECTOR_LABEL = "controllers-e2e.leaderworkerset.test/session"
CONFIGURATION_REFS = {
    "MutatingWebhookConfiguration": certs.MUTATING_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": certs.VALIDATING_CONFIGURATIONS,
}
NAME = "test-sample"


def _scoped(configuration: dict[str, Any]) -> dict[str, Any]:
    """Only namespaces of this session are sent to this short-lived webhook server."""
    configuration["metadata"]["name"] = f"{configuration['metadata']['name']}-e2e-{SESSION}"
    for webhook in configuration["webhooks"]:
        webhook["namespaceSelector"] = {"matchLabels": {SELECTOR_LABEL: SESSION}}
        webhook["timeoutSeconds"] = 10
    return configuration


# This module runs its controllers in-process. The e2e tests run `lws manager` processes on the
# shared full cluster, and two controllers acting on the same objects would double every action,
# so the module gets a full cluster of its own.
@pytest.fixture(scope="module")
def full_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = clusters.start("full", f"{clusters.worker_id(request)}-controllers")
    yield cluster
    clusters.stop(cluster)


@pytest.fixture(scope="module")
async def full_kube(full_cluster: LocalCluster) -> AsyncIterator[AsyncClient]:
    client = clusters.client_for(full_cluster)
    yield client
    await client.close()


@pytest.fixture
async def full_namespace(full_kube: AsyncClient, request: pytest.FixtureRequest) -> str:
    return await clusters.fresh_namespace(full_kube, request)


@pytest.fixture(scope="module")
async def full_api(full_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    client = new_client(ClientOptions(kubeconfig=str(full_cluster.kubeconfig)))
    yield client
    await client.close()


@pytest.fixture(scope="module")
async def full_stack(
    full_kube: AsyncClient,
    full_cluster: LocalCluster,
    full_api: KubeClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RequestLog]:
    """CRDs, our webhooks (URL-registered, session-scoped) and controllers on the full cluster,
    with the log of the controllers' requests."""
    await install_crds(full_kube)
    cert_dir: Path = tmp_path_factory.mktemp("e2e-webhook-certs")
    artifacts = certissue.generate(
        certs.CertConfig(namespace="lws-system", ip_addresses=("127.0.0.1",)), certs.utc_now()
    )
    certs.write_cert_dir(cert_dir, artifacts)
    server = WebhookServer(cert_dir, host="127.0.0.1", port=0)
    await server.start()
    configurations = [_scoped(cfg) for cfg in render_for_url("127.0.0.1", server.port, artifacts.ca_cert)]
    for configuration in configurations:
        await full_api.create(CONFIGURATION_REFS[configuration["kind"]], configuration)

    client = new_client(ClientOptions(kubeconfig=str(full_cluster.kubeconfig)))
    log = RequestLog(client)
    async with running_controllers(full_cluster, client=client):
        yield log
    for configuration in configurations:
        with contextlib.suppress(ApiStatusError):
            await full_api.delete(
                CONFIGURATION_REFS[configuration["kind"]], None, configuration["metadata"]["name"]
            )
    await server.stop()


@pytest.fixture
async def e2e_namespace(full_api: KubeClient, full_stack: RequestLog, full_namespace: str) -> str:
    await full_api.merge_patch(
        NAMESPACES, None, full_namespace, {"metadata": {"labels": {SELECTOR_LABEL: SESSION}}}
    )
    return full_namespace


async def _group_pods(api: KubeClient, ns: str) -> list[dict[str, Any]]:
    return await api.list(PODS, ns, label_selector=f"{c.LABEL_SET_NAME}={NAME}")


async def _all_ready(api: KubeClient, ns: str, count: int) -> list[dict[str, Any]]:
    pods = [p for p in await _group_pods(api, ns) if not p["metadata"].get("deletionTimestamp")]
    ready = [
        p
        for p in pods
        if any(
            cond["type"] == "Ready" and cond["status"] == "True"
            for cond in (p.get("status") or {}).get("conditions") or []
        )
    ]
    if len(ready) != count:
        raise AssertionError(f"{len(ready)} of {count} pods ready")
    return ready


async def test_lws_becomes_available_and_recovers_a_group(
    full_api: KubeClient, full_cluster: LocalCluster, e2e_namespace: str
) -> None:
    ns = e2e_namespace
    lws = LeaderWorkerSetBuilder(ns).replicas(2).size(3).obj()
    for template in ("leaderTemplate", "workerTemplate"):
        container = lws["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": "100m"}}
    await full_api.create(LEADERWORKERSETS, lws)

    pods = await eventually(lambda: _all_ready(full_api, ns, 6), timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)
    env = {e["name"]: e.get("value") for e in pods[0]["spec"]["containers"][0].get("env") or []}
    assert env[c.ENV_LWS_GROUP_SIZE] == "3", env
    leader_uid = (await full_api.get(PODS, ns, f"{NAME}-1"))["metadata"]["uid"]
    untouched_uid = (await full_api.get(PODS, ns, f"{NAME}-0"))["metadata"]["uid"]

    # A worker container of group 1 crashes: the whole group is recreated, group 0 is untouched.
    await asyncio.to_thread(
        chaos.restart_container, RestClient.from_kubeconfig(full_cluster.kubeconfig), ns, f"{NAME}-1-2"
    )

    async def group_replaced() -> bool:
        try:
            leader = await full_api.get(PODS, ns, f"{NAME}-1")
        except ApiStatusError as err:
            raise AssertionError(str(err)) from err  # between deletion and re-creation
        return bool(leader["metadata"]["uid"] != leader_uid)

    await eventually(group_replaced, timeout=LONG_TIMEOUT)
    await expect.expect_event(
        full_api,
        ns,
        c.EVENT_RECREATE_GROUP,
        f"Worker pod {NAME}-1-2 failed, deleted leader pod {NAME}-1 to recreate group 1",
    )
    await eventually(lambda: _all_ready(full_api, ns, 6), timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)
    assert (await full_api.get(PODS, ns, f"{NAME}-0"))["metadata"]["uid"] == untouched_uid
    assert len(await expect.events_with(full_api, ns, c.EVENT_RECREATE_GROUP)) == 1


async def test_rolling_update_with_surge_replaces_every_group(
    full_api: KubeClient, e2e_namespace: str
) -> None:
    """A template change rolls through the real StatefulSet controller: every group ends on the new
    revision, the surge group is reclaimed, and the old revision is deleted."""
    ns = e2e_namespace
    lws = LeaderWorkerSetBuilder(ns).replicas(3).size(2).max_surge(1).obj()
    for template in ("leaderTemplate", "workerTemplate"):
        container = lws["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": "100m"}}
    await full_api.create(LEADERWORKERSETS, lws)
    await eventually(lambda: _all_ready(full_api, ns, 6), timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)

    def new_image(obj: dict[str, Any]) -> None:
        worker = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
        worker["image"] = "docker.io/nginxinc/nginx-unprivileged:1.28"

    updated = await kubelet.update_lws(full_api, ns, NAME, new_image)
    key = kubelet.current_revision_key(updated)

    async def all_on_new_revision() -> bool:
        pods = await _all_ready(full_api, ns, 6)
        keys = {p["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH] for p in pods}
        assert keys == {key}, keys
        return True

    await eventually(all_on_new_revision, timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)
    await expect.expect_valid_leader_statefulset(full_api, ns, 3)
    await expect.expect_revisions(full_api, ns, 1)
    await expect.expect_event(full_api, ns, c.EVENT_GROUPS_PROGRESSING, f"deleting surge replica {NAME}-3")


async def test_an_in_place_update_lists_no_pod_or_statefulset(
    full_api: KubeClient, full_stack: RequestLog, e2e_namespace: str
) -> None:
    """The in-place step reads the set's pods and StatefulSets from the watch-fed caches and is woken
    by their events: an update of two groups sends no LIST of either (it listed both on every
    round, and polled every second, before)."""
    ns, log = e2e_namespace, full_stack
    lws = LeaderWorkerSetBuilder(ns).replicas(2).size(2)
    lws.annotation(ext.ANNOTATION_UPDATE_STRATEGY, ext.UPDATE_STRATEGY_IN_PLACE)
    await full_api.create(LEADERWORKERSETS, lws.obj())
    await eventually(lambda: _all_ready(full_api, ns, 4), timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)
    uids = {name: p["metadata"]["uid"] for name, p in (await pods_by_name(full_api, ns, NAME)).items()}
    since = log.mark()

    new_image = "nginx:2"
    await update_worker_image(full_api, ns, new_image, name=NAME)

    async def updated_in_place() -> bool:
        events = await expect.events_with(full_api, ns, ext.EVENT_GROUP_UPDATED_IN_PLACE)
        assert len(events) == 2, events
        pods = await pods_by_name(full_api, ns, NAME)
        assert {name: p["metadata"]["uid"] for name, p in pods.items()} == uids, "a pod was recreated"
        for pod in pods.values():
            if pod["metadata"]["labels"][c.LABEL_WORKER_INDEX] != "0":
                assert pod["status"]["containerStatuses"][0]["image"] == new_image, pod["metadata"]["name"]
        return True

    await eventually(updated_in_place, timeout=LONG_TIMEOUT)
    await eventually(lambda: _all_ready(full_api, ns, 4), timeout=LONG_TIMEOUT)
    await expect.expect_available_condition(full_api, ns)
    assert log.mark() > since, "the controllers' requests are recorded"
    assert log.lists(PODS, since=since) == []
    assert log.lists(STATEFULSETS, since=since) == []
