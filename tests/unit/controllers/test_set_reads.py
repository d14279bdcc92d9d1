"""The LWS controllers' set-wide cache reads: a set's leaders come from an index of their own, and
the leaders behind the group-replacement gate are found without converting any pod."""

from __future__ import annotations

from typing import Any

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.controllers.informers import _GROUP_INDEXES, SharedInformers
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
