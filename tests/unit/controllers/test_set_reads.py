"""The LWS controllers' set-wide cache reads: a set's leaders come from an index of their own, the
leaders behind the group-replacement gate are found without converting any pod, and a cached pod
carries everything an in-place update decides on."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import _GROUP_INDEXES, SharedInformers
from leaderworkerset.core.rollout import inplaceupdate as ip
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, STATEFULSET_CODEC, Pod
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.store import Store
from tests.unit.runtime.fakes import FakeListerWatcher


def pod(name: str, set_name: str, worker: str, *, gated: bool = False, ns: str = "ns") -> Pod:
    labels = {c.LABEL_SET_NAME: set_name, c.LABEL_WORKER_INDEX: worker, c.LABEL_GROUP_INDEX: "0"}
    spec: dict[str, Any] = {}
    if gated:
        spec["schedulingGates"] = [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}, {"name": "other"}]
    raw = {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec}
    return msgspec.convert(raw, Pod)


def informers_with(pods: list[Pod]) -> SharedInformers:
    store = Store(POD_CODEC, indexers=_GROUP_INDEXES)
    for p in pods:
        store.upsert(p)

    def informer(name: str, store: Any) -> Any:
        return Informer(name, FakeListerWatcher(), store)

    return SharedInformers(
        lws=informer("lws", Store(DictCodec())),
        statefulsets=informer("sts", Store(STATEFULSET_CODEC)),
        pods=informer("pods", store),
        services=informer("svc", Store(DictCodec())),
        revisions=informer("cr", Store(DictCodec())),
        deployments=informer("deploy", Store(DictCodec())),
    )


PODS = [
    pod("a-0", "a", "0"),
    pod("a-0-1", "a", "1"),
    pod("a-1", "a", "0", gated=True),
    pod("a-1-1", "a", "1", gated=True),  # a gated worker is no leader to wake
    pod("b-0", "b", "0", gated=True),
    pod("a-0", "a", "0", ns="other"),
]


def test_a_sets_leaders_are_its_worker_index_0_pods_in_its_namespace() -> None:
    leaders = informers_with(PODS).set_leader_pods("ns", "a")
    assert sorted(p["metadata"]["name"] for p in leaders) == ["a-0", "a-1"]
    assert all(isinstance(p, dict) for p in leaders)


def test_gated_leaders_are_named_without_conversion() -> None:
    assert informers_with(PODS).gated_leader_keys("ns", "a") == [ObjectKey("ns", "a-1")]
    assert informers_with(PODS).gated_leader_keys("ns", "c") == []


def full_pod(*, running: str, reported: str, cpu: str, resizes: bool) -> dict[str, Any]:
    """A pod as the API server returns it, with what an in-place update reads and more."""
    status: dict[str, Any] = {"name": "main", "image": reported, "imageID": "sha256:1", "ready": True}
    status["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if resizes:
        status["resources"] = {"requests": {"cpu": cpu}}
    return {
        "metadata": {"name": "a-0-1", "namespace": "ns", "labels": {c.LABEL_SET_NAME: "a"}},
        "spec": {
            "containers": [
                {"name": "main", "image": running, "resources": {"requests": {"cpu": cpu}}, "args": ["x"]}
            ],
            "initContainers": [{"name": "proxy", "image": "proxy:1", "restartPolicy": "Always"}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [status],
            "initContainerStatuses": [{"name": "proxy", "image": "proxy:1", "ready": True}],
        },
    }


@pytest.mark.parametrize(
    "full",
    [
        full_pod(running="vllm:2", reported="vllm:2", cpu="1", resizes=True),  # settled
        full_pod(running="vllm:2", reported="vllm:1", cpu="1", resizes=True),  # restarting
        full_pod(running="vllm:1", reported="vllm:1", cpu="2", resizes=False),  # not patched yet
    ],
)
def test_an_in_place_update_decides_on_the_cached_pod_as_on_the_full_one(full: dict[str, Any]) -> None:
    old = {
        "spec": {"containers": [{"name": "main", "image": "vllm:1", "resources": {"requests": {"cpu": "2"}}}]}
    }
    new = {
        "metadata": {"labels": {"team": "b"}},
        "spec": {
            "containers": [{"name": "main", "image": "vllm:2", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [{"name": "proxy", "image": "proxy:2", "restartPolicy": "Always"}],
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }
    delta = ip.template_delta(old, new)
    cached = informers_with([msgspec.convert(full, Pod)]).set_pods("ns", "a")[0]
    assert ip.pod_settled(cached) is ip.pod_settled(full)
    assert ip.node_resizes(cached) is ip.node_resizes(full)
    assert ip.restarts_containers(delta, cached) is ip.restarts_containers(delta, full)
    assert ip.resize_patch(cached, delta) == ip.resize_patch(full, delta)
    assert ip.pod_patch(cached, delta, {}) == ip.pod_patch(full, delta, {})
