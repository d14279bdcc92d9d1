"""The LWS controllers' set-wide cache reads: a set's leaders come from an index of their own, the
leaders behind the group-replacement gate and the pods a restart budget holds are found through
indexes without converting any pod, leaders and StatefulSets are converted once per version and
shared, and a cached pod carries everything an in-place update decides on."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from leaderworkerset.api import constants as c
from leaderworkerset.controllers import informers as shared
from leaderworkerset.controllers.informers import _GROUP_INDEXES, SharedInformers, SharedViewChangedError
from leaderworkerset.core.rollout.inplaceupdate import patches
from leaderworkerset.core.rollout.inplaceupdate.classification import node_resizes
from leaderworkerset.runtime.codecs import DictCodec
from leaderworkerset.runtime.objects import ObjectKey
from leaderworkerset.runtime.projections import POD_CODEC, STATEFULSET_CODEC, Pod
from leaderworkerset.runtime.reflector import Informer
from leaderworkerset.runtime.store import Store
from tests.unit.runtime.fakes import FakeListerWatcher


def raw_pod(
    name: str,
    set_name: str,
    worker: str,
    *,
    gated: bool = False,
    held: bool = False,
    ns: str = "ns",
    rv: str = "1",
) -> dict[str, Any]:
    labels = {c.LABEL_SET_NAME: set_name, c.LABEL_WORKER_INDEX: worker, c.LABEL_GROUP_INDEX: "0"}
    spec: dict[str, Any] = {}
    if gated:
        spec["schedulingGates"] = [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}, {"name": "other"}]
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels, "resourceVersion": rv}
    if held:
        meta["finalizers"] = ["example.com/other", c.FINALIZER_GROUP_RESTART_BUDGET_CLEANUP]
    return {"metadata": meta, "spec": spec}


def pod(
    name: str, set_name: str, worker: str, *, gated: bool = False, held: bool = False, ns: str = "ns"
) -> Pod:
    return msgspec.convert(raw_pod(name, set_name, worker, gated=gated, held=held, ns=ns), Pod)


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
    pod("a-0-1", "a", "1", held=True),
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


def test_pods_a_restart_budget_holds_are_named_from_their_index() -> None:
    assert informers_with(PODS).set_held_pod_keys("ns", "a") == [ObjectKey("ns", "a-0-1")]
    assert informers_with(PODS).set_held_pod_keys("ns", "b") == []


def watch_event(kind: str, obj: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"type": kind, "object": obj})


def test_a_leader_is_converted_once_per_version_and_shared_until_it_changes() -> None:
    reads = informers_with(PODS)
    first = reads.pod("ns", "a-0")
    assert first is not None
    assert any(leader is first for leader in reads.set_leader_pods("ns", "a"))
    assert reads.pod("ns", "a-0") is first
    reads.pods._apply_event(watch_event("MODIFIED", raw_pod("a-0", "a", "0", rv="2")))
    second = reads.pod("ns", "a-0")
    assert second is not first
    assert second is not None
    assert second["metadata"]["resourceVersion"] == "2"
    assert reads.pod("ns", "a-0") is second


def test_workers_are_converted_on_every_read() -> None:
    reads = informers_with(PODS)
    assert reads.pod("ns", "a-0-1") is not reads.pod("ns", "a-0-1")


def test_a_deleted_leader_leaves_no_shared_view_behind() -> None:
    reads = informers_with(PODS)
    reads.set_leader_pods("ns", "a")
    assert len(reads._leader_views) == 2
    reads.pods._apply_event(watch_event("DELETED", raw_pod("a-0", "a", "0", rv="3")))
    assert len(reads._leader_views) == 1


def test_statefulsets_are_shared_between_reads() -> None:
    reads = informers_with([])
    raw = {
        "metadata": {
            "name": "a-0",
            "namespace": "ns",
            "labels": {c.LABEL_SET_NAME: "a"},
            "resourceVersion": "1",
        }
    }
    reads.statefulsets._apply_event(watch_event("ADDED", raw))
    assert reads.statefulset("ns", "a-0") is reads.statefulset("ns", "a-0")


def test_the_suites_check_catches_a_reader_that_changes_a_shared_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LWS_CHECK_SHARED_VIEWS", "1")
    reads = informers_with(PODS)
    leader = reads.pod("ns", "a-0")
    assert leader is not None
    leader["metadata"]["labels"]["team"] = "changed"
    with pytest.raises(SharedViewChangedError, match="a-0"):
        reads.pod("ns", "a-0")
    assert shared.CHANGED_VIEWS == ["ns/a-0"]
    shared.CHANGED_VIEWS.clear()  # this test's change was on purpose: the suite-wide check passes


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
    delta = patches.template_delta(old, new)
    cached = informers_with([msgspec.convert(full, Pod)]).set_pods("ns", "a")[0]
    assert patches.pod_settled(cached) is patches.pod_settled(full)
    assert node_resizes(cached) is node_resizes(full)
    assert patches.restarts_containers(delta, cached) is patches.restarts_containers(delta, full)
    assert patches.resize_patch(cached, delta) == patches.resize_patch(full, delta)
    assert patches.pod_patch(cached, delta, {}) == patches.pod_patch(full, delta, {})
