"""Cached pods share what the pods of one template repeat, and still read, convert and
decide exactly as a pod decoded without sharing: equal values are one object, a changed image,
resource or toleration is a value of its own that the in-place update tells apart."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from leaderworkerset.core.rollout.inplaceupdate import patches
from leaderworkerset.runtime.codecs import SharedValues
from leaderworkerset.runtime.projections import POD_CODEC, Pod
from tests.support.builders.common import Obj
from tests.support.builders.pod import pod

PLAIN = msgspec.json.Decoder(Pod)  # the same projection, nothing shared

TEMPLATE_SPEC: Obj = {
    "containers": [
        {
            "name": "main",
            "image": "registry.example/serve:1",
            "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
        },
        {"name": "log", "image": "registry.example/log:1"},
    ],
    "initContainers": [
        {"name": "proxy", "image": "registry.example/proxy:1", "restartPolicy": "Always"},
        {"name": "setup", "image": "registry.example/setup:1"},
    ],
    "tolerations": [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"key": "accel", "operator": "Equal", "value": "tpu", "effect": "NoSchedule"},
    ],
}


def running_pod(name: str, spec: Obj = TEMPLATE_SPEC, *, started: str = "2026-12-04T10:00:01Z") -> Obj:
    """A pod of `spec` as the API server returns it once its containers run."""
    built = (
        pod(name, "bench")
        .spec(spec)
        .node("node-1")
        .created("2026-12-04T10:00:00Z")
        .phase("Running")
        .condition("Ready", at="2026-12-04T10:00:02Z")
        .container_status("main", ready=True, state={"running": {"startedAt": started}})
        .obj()
    )
    statuses = built["status"]["containerStatuses"]
    statuses[0]["image"] = spec["containers"][0]["image"]
    statuses[0]["resources"] = copy.deepcopy(spec["containers"][0].get("resources"))
    return built


def decoded(body: Obj) -> Pod:
    return POD_CODEC.decode_object(msgspec.json.encode(body))


def changed(path: str, value: Any) -> Obj:
    """TEMPLATE_SPEC with the value at `path` (dotted; list items by index) replaced."""
    spec = copy.deepcopy(TEMPLATE_SPEC)
    *parents, last = path.split(".")
    node: Any = spec
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value
    return spec


LIMITS = "containers.0.resources.limits"
READS_AS_BEFORE = [
    pytest.param(running_pod("p"), id="template pod"),
    pytest.param(running_pod("p", changed(LIMITS, {"memory": "1Gi", "cpu": "2"})), id="quantities reordered"),
    pytest.param(running_pod("p", changed(LIMITS, {"cpu": 2})), id="numeric quantity"),
    pytest.param(running_pod("p", changed(LIMITS, {"cpu": True})), id="boolean quantity"),
    pytest.param(running_pod("p", changed("containers.0.resources", {"limits": {}})), id="empty limits"),
    pytest.param(running_pod("p", changed("tolerations", [])), id="no tolerations"),
    pytest.param(pod("bare", "bench").spec({"containers": []}).obj(), id="no containers"),
]


@pytest.mark.parametrize("body", READS_AS_BEFORE)
def test_a_shared_pod_converts_as_one_decoded_alone(body: Obj) -> None:
    decoded(running_pod("other"))  # something shared already
    raw = msgspec.json.encode(body)
    assert msgspec.to_builtins(POD_CODEC.decode_object(raw)) == msgspec.to_builtins(PLAIN.decode(raw))
    assert msgspec.to_builtins(POD_CODEC.decode_list(msgspec.json.encode({"items": [body]})).items or []) == [
        msgspec.to_builtins(PLAIN.decode(raw))
    ]


def test_cases_ran() -> None:
    assert len(READS_AS_BEFORE) == 7


def test_pods_of_one_template_share_one_copy_of_what_they_repeat() -> None:
    first, second = decoded(running_pod("a")), decoded(running_pod("b"))
    assert first.spec.containers is second.spec.containers
    assert first.spec.initContainers is second.spec.initContainers
    assert first.spec.tolerations is second.spec.tolerations
    one, two = (p.status.containerStatuses[0] for p in (first, second) if p.status.containerStatuses)
    assert one.resources is two.resources
    assert one.image is two.image
    assert one.state is not None
    assert two.state is not None
    assert one.state.running is two.state.running
    assert first.metadata.creationTimestamp is second.metadata.creationTimestamp
    assert first.metadata.name != second.metadata.name  # a pod's own values stay its own


CHANGES = [
    pytest.param("containers.0.image", "registry.example/serve:2", id="image"),
    pytest.param("containers.0.resources.limits.cpu", "3", id="cpu limit"),
    pytest.param("containers.0.resources.requests", {"cpu": "1"}, id="memory request removed"),
    pytest.param("initContainers.0.image", "registry.example/proxy:2", id="sidecar image"),
    pytest.param("tolerations.1.effect", "NoExecute", id="toleration effect"),
    pytest.param("tolerations.0.tolerationSeconds", 600, id="toleration seconds"),
]


@pytest.mark.parametrize(("path", "value"), CHANGES)
def test_a_changed_value_is_its_own_and_the_in_place_update_tells_it_apart(path: str, value: Any) -> None:
    new_spec = changed(path, value)
    old_pod, new_pod = decoded(running_pod("old")), decoded(running_pod("new", new_spec))
    new_again = decoded(running_pod("new-2", new_spec))
    area = path.split(".")[0]
    assert getattr(old_pod.spec, area) is not getattr(new_pod.spec, area)
    assert getattr(old_pod.spec, area) != getattr(new_pod.spec, area)
    assert getattr(new_again.spec, area) is getattr(new_pod.spec, area)
    delta = patches.template_delta({"spec": TEMPLATE_SPEC}, {"spec": new_spec})
    old_view, new_view = msgspec.to_builtins(old_pod), msgspec.to_builtins(new_pod)
    # The pod still on the old template needs a patch (or a resize); the one on the new one does not.
    assert (patches.pod_patch(old_view, delta, {}), patches.resize_patch(old_view, delta)) != (None, None)
    assert (patches.pod_patch(new_view, delta, {}), patches.resize_patch(new_view, delta)) == (None, None)


def test_change_cases_ran() -> None:
    assert len(CHANGES) == 6


def test_shared_values_keep_the_first_equal_value_within_their_bound() -> None:
    table: SharedValues[list[int]] = SharedValues(bound=2)
    first = [1]
    assert table.get((1,), first) is first
    assert table.get((1,), [1]) is first
    table.get((2,), [2])
    fresh = [3]
    assert table.get((3,), fresh) is fresh  # past the bound the table starts afresh
    assert len(table) == 1
