"""The LWS and pod controllers running in-process on the test's event loop (apiserver shape).

One manager per session serves every test; each test works in a fresh namespace. The tests play
the StatefulSet controller, the kubelet and the pod webhook (tests/support/kubelet.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from lightkube import AsyncClient

from leaderworkerset.controllers.leaderworkerset.inplacerestart import InPlaceRestartSupport
from leaderworkerset.controllers.setup import RegisteredControllers
from leaderworkerset.crd.install import install_crds
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from tests.support import processed
from tests.support.inprocess import running_controllers

AGENT_IMAGE = "lws.local/lws-python:test"


@pytest.fixture(scope="session")
async def api(apiserver_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """Dict-level client the tests use to act as the other Kubernetes components."""
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    yield client
    await client.close()


# Package scope: the controllers stop when this package's tests end, so they never act on the
# objects of another package's tests (the DisaggregatedSet tests play the LWS controller themselves).
@pytest.fixture(scope="package")
async def lws_controllers(
    kube: AsyncClient, apiserver_cluster: LocalCluster
) -> AsyncIterator[RegisteredControllers]:
    await install_crds(kube)
    client = new_client(ClientOptions(kubeconfig=str(apiserver_cluster.kubeconfig)))
    _record_writes(client)
    # What in-place restarts need is there (tests flip it): as a manager with an agent image on a
    # cluster that supports RestartAllContainers.
    support = InPlaceRestartSupport(agent_image=AGENT_IMAGE)
    async with running_controllers(
        apiserver_cluster, client=client, enable_disaggregatedset=False, restart_support=support
    ) as registered:
        processed.RUNNING.append(registered)
        yield registered
        processed.RUNNING.remove(registered)


def _record_writes(client: KubeClient) -> None:
    """Note each apply, create and patch the controllers send in `processed.WRITES` (then send it)."""
    send_apply, send_create, send_patch = client.apply, client.create, client.patch

    def note(verb: str, ref: Any, obj: Any) -> None:
        meta = obj.get("metadata") or {}
        processed.WRITES.append((verb, ref.plural, meta.get("namespace", ""), meta.get("name", "")))

    async def apply(ref: Any, obj: Any, *args: Any, **options: Any) -> Any:
        note("apply", ref, obj)
        return await send_apply(ref, obj, *args, **options)

    async def create(ref: Any, obj: Any, *args: Any, **options: Any) -> Any:
        note("create", ref, obj)
        return await send_create(ref, obj, *args, **options)

    async def patch(ref: Any, namespace: Any, name: str, body: Any, *args: Any, **options: Any) -> Any:
        # A subresource's patch (status, resize) is noted under its own verb.
        verb = "/".join(("patch", *([options["subresource"]] if options.get("subresource") else [])))
        processed.WRITES.append((verb, ref.plural, namespace or "", name))
        return await send_patch(ref, namespace, name, body, *args, **options)

    client.apply = apply  # type: ignore[method-assign]
    client.create = create  # type: ignore[method-assign]
    client.patch = patch  # type: ignore[method-assign]


@pytest.fixture
async def ns(namespace: str, lws_controllers: RegisteredControllers) -> str:
    """A fresh namespace with the controllers running."""
    return namespace
