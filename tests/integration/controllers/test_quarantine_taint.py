"""Node quarantine's taint mode against the real API server (RBAC enforced): the LWS controller
(in-process, admin credentials) taints a node the set quarantines, records it, and at the end of the
cool-down removes its taint and only its taint; a manager whose role has no node patch (the default
install) is refused by the API server's authorizer, and the refusal is an outcome, not a crash.

The test writes the set's quarantine state as the pod controller does after a node's failures (that
step is tests/integration/controllers/test_node_quarantine.py's), with a short cool-down.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.controllers.quarantine.taints import NodeTaints
from leaderworkerset.core.conditions import format_time_ms
from leaderworkerset.core.quarantine.taint import REFUSED, TAINTED
from leaderworkerset.devcluster.cluster import LocalCluster
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.events import ApiEventSink, EventRecorder
from leaderworkerset.runtime.resources import LEADERWORKERSETS, NODES, ResourceRef
from tests.support import expect
from tests.support.builders import LeaderWorkerSetBuilder, NodeBuilder
from tests.support.serviceaccount import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    binding,
    kubeconfig_with_user,
    token,
)
from tests.support.wait import eventually

pytestmark = [pytest.mark.cluster]
Obj = dict[str, Any]
NAME = "test-sample"
COOLDOWN_SECONDS = 8
THEIRS = {"key": "example.com/maintenance", "effect": "NoSchedule"}
OURS = {"key": ext.TAINT_QUARANTINED, "effect": "NoSchedule"}
SERVICE_ACCOUNTS = ResourceRef("", "v1", "ServiceAccount", "serviceaccounts")


def _state(node: str, until_in: float) -> str:
    now = datetime.datetime.now(datetime.UTC)
    until = now + datetime.timedelta(seconds=until_in)
    failure = {"time": format_time_ms(now), "group": "0", "pod": f"{NAME}-0-1", "cause": "exit-code"}
    return json.dumps(
        [{"node": node, "since": format_time_ms(now), "until": format_time_ms(until), "failures": [failure]}]
    )


async def _taints(api: KubeClient, node: str) -> list[Obj]:
    return list((await api.get(NODES, None, node)).get("spec", {}).get("taints") or [])


async def _recorded(api: KubeClient, ns: str) -> list[Obj]:
    lws = await api.get(LEADERWORKERSETS, ns, NAME)
    return list(
        json.loads((lws["metadata"].get("annotations") or {}).get(ext.ANNOTATION_QUARANTINED_NODES) or "[]")
    )


@pytest.fixture
async def node(api: KubeClient, ns: str) -> Any:
    name = f"t-{ns[-12:]}"
    await api.create(NODES, NodeBuilder(name).obj())
    await api.merge_patch(NODES, None, name, {"spec": {"taints": [THEIRS]}})
    yield name
    await api.delete(NODES, None, name)


async def test_a_quarantined_node_is_tainted_and_only_our_taint_goes_after_the_cool_down(
    api: KubeClient, ns: str, node: str
) -> None:
    annotations = {
        ext.ANNOTATION_QUARANTINE_AFTER: "2/5s",
        ext.ANNOTATION_QUARANTINE_MODE: ext.QUARANTINE_MODE_TAINT,
        ext.ANNOTATION_QUARANTINED_NODES: _state(node, COOLDOWN_SECONDS),
    }
    await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, NAME).annotations(annotations).obj())

    async def tainted() -> bool:
        assert await _taints(api, node) == [THEIRS, OURS]
        assert [q.get("taint") for q in await _recorded(api, ns)] == [TAINTED]
        return True

    await eventually(tainted)
    note = f"Node {node} tainted {ext.TAINT_QUARANTINED}:NoSchedule while it is quarantined"
    await expect.expect_event(api, ns, ext.EVENT_NODE_TAINTED, note)

    async def released() -> bool:
        assert await _recorded(api, ns) == [], "still quarantined"
        assert await _taints(api, node) == [THEIRS], "our taint left, or theirs removed"
        return True

    await eventually(released, timeout=COOLDOWN_SECONDS + 30)
    await expect.expect_event(
        api, ns, ext.EVENT_NODE_UNTAINTED, f"Node {node} untainted: its quarantine ended"
    )


async def test_affinity_mode_never_touches_the_node(api: KubeClient, ns: str, node: str) -> None:
    annotations = {ext.ANNOTATION_QUARANTINE_AFTER: "2/5s", ext.ANNOTATION_QUARANTINED_NODES: _state(node, 2)}
    await api.create(LEADERWORKERSETS, LeaderWorkerSetBuilder(ns, NAME).annotations(annotations).obj())

    async def released() -> bool:  # the positive sign: the controller released the node
        assert await _recorded(api, ns) == [], "still quarantined"
        return True

    await eventually(released, timeout=30)
    assert await _taints(api, node) == [THEIRS]


async def test_without_node_patch_the_taint_is_refused_by_rbac(
    api: KubeClient, ns: str, node: str, apiserver_cluster: LocalCluster, tmp_path: Path
) -> None:
    """What the default install's role gets from the API server: a refusal, recorded as an outcome."""
    account, role = "no-node-write", f"{ns}-no-node-write"
    await api.create(
        SERVICE_ACCOUNTS,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": ns}},
    )
    rule = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}
    await api.apply(
        CLUSTER_ROLES,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [rule],
        },
    )
    await api.apply(CLUSTER_ROLE_BINDINGS, binding(role, role, account, ns))
    kubeconfig = kubeconfig_with_user(
        apiserver_cluster, {"token": token(apiserver_cluster, account, ns)}, tmp_path / "kc"
    )
    restricted = new_client(ClientOptions(kubeconfig=str(kubeconfig)))
    try:
        lws = LeaderWorkerSetBuilder(ns, NAME).obj()
        taints = NodeTaints(restricted, EventRecorder(ApiEventSink(api), c.EVENT_COMPONENT_LWS))

        async def refused() -> bool:  # the binding reaches the authorizer's cache shortly
            assert await taints.taint(lws, [node]) == {node: REFUSED}
            return True

        await eventually(refused)
        assert await _taints(api, node) == [THEIRS]
    finally:
        await restricted.close()
        await api.delete(CLUSTER_ROLE_BINDINGS, None, role)
        await api.delete(CLUSTER_ROLES, None, role)
