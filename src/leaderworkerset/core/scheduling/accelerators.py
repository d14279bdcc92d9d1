"""Accelerators a group needs and nodes have free: whole devices (GPUs, TPUs) counted from pod requests."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.quantity import Quantity
from leaderworkerset.core.objects import (
    Obj,
    labels_of,
    lws_size,
    name_of,
)
from leaderworkerset.core.scheduling.podrequests import pod_requests

Accelerators = dict[str, int]


# Extended resources that are whole devices; surge is counted in these.
NVIDIA_GPU = "nvidia.com/gpu"


AMD_GPU = "amd.com/gpu"


ACCELERATOR_RESOURCES = (NVIDIA_GPU, c.TPU_RESOURCE_NAME, AMD_GPU)


_TERMINAL_PHASES = ("Succeeded", "Failed")


def _device_count(quantity: Quantity) -> int:
    """Devices are whole; a fractional quantity (never valid for devices) rounds up."""
    unscaled, exponent = int(quantity.unscaled), int(quantity.exponent)
    if exponent >= 0:
        return int(unscaled * 10**exponent)
    return int(-(-unscaled // 10**-exponent))


def _with_requests_from_limits(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The API server defaults a container's missing requests to its limits; templates stored in
    a custom resource were never defaulted, so do it here before adding requests up."""
    result = copy.deepcopy(dict(spec))
    for field_name in ("containers", "initContainers"):
        for container in result.get(field_name) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
                continue
            requests = resources.setdefault("requests", {})
            for name, value in resources["limits"].items():
                requests.setdefault(name, value)
    return result


def pod_accelerators(spec: Mapping[str, Any], path: str = "spec") -> Accelerators:
    """Accelerators one pod with this spec takes (effective requests, limits as defaults)."""
    requests = pod_requests(_with_requests_from_limits(spec), path)
    return {name: _device_count(q) for name, q in requests.items() if name in ACCELERATOR_RESOURCES}


def _add(total: Accelerators, extra: Mapping[str, int], times: int = 1) -> None:
    for name, count in extra.items():
        total[name] = total.get(name, 0) + count * times


def group_pod_accelerators(lws: Obj) -> list[Accelerators]:
    """The accelerators of each pod of one group of this LWS: its leader (the leader template, else
    the worker one), then size-1 workers."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    base = "spec.leaderWorkerTemplate"
    worker_spec = (lwt.get("workerTemplate") or {}).get("spec") or {}
    worker = pod_accelerators(worker_spec, f"{base}.workerTemplate.spec")
    if lwt.get("leaderTemplate") is not None:
        leader = pod_accelerators(
            (lwt["leaderTemplate"] or {}).get("spec") or {}, f"{base}.leaderTemplate.spec"
        )
    else:
        leader = dict(worker)
    return [leader, *(dict(worker) for _ in range(lws_size(lws) - 1))]


def group_accelerators(lws: Obj) -> Accelerators:
    """One group of this LWS: the sum over its pods."""
    total: Accelerators = {}
    for pod in group_pod_accelerators(lws):
        _add(total, pod)
    return total


def _selector_matches(node: Obj, selector: Mapping[str, str]) -> bool:
    labels = labels_of(node)
    return all(labels.get(key) == value for key, value in selector.items())


def free_accelerators_by_node(
    nodes: Iterable[Obj], pods: Iterable[Obj], node_selector: Mapping[str, str]
) -> dict[str, Accelerators]:
    """Per schedulable node carrying `node_selector`: allocatable minus what its bound,
    non-terminated pods request (affinity and taints are not evaluated)."""
    free: dict[str, Accelerators] = {}
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable") or not _selector_matches(node, node_selector):
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        free[name_of(node)] = pod_accelerators({"containers": [{"resources": {"requests": allocatable}}]})
    for pod in pods:
        node_free = free.get(str((pod.get("spec") or {}).get("nodeName")))
        if node_free is None or (pod.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            continue
        _add(node_free, pod_accelerators(pod.get("spec") or {}, f"pod {name_of(pod)} spec"), -1)
    return free


def free_accelerators(
    nodes: Iterable[Obj], pods: Iterable[Obj], node_selector: Mapping[str, str]
) -> Accelerators:
    """`free_accelerators_by_node` summed over the eligible nodes."""
    return total_free(free_accelerators_by_node(nodes, pods, node_selector))


def total_free(by_node: Mapping[str, Accelerators]) -> Accelerators:
    free: Accelerators = {}
    for node_free in by_node.values():
        _add(free, node_free)
    return free


def group_fits(by_node: Mapping[str, Accelerators], pods: Iterable[Accelerators]) -> bool:
    """Whether every pod of a group finds a node with its accelerators free, largest pod first,
    each on the node it fits with the least left over (a pod's devices come from one node, so a
    sum over nodes would say yes to 8 GPUs spread 4 + 4). Pods without accelerators always fit."""
    left = {node: dict(free) for node, free in by_node.items()}
    for pod in sorted(pods, key=lambda p: -sum(p.values())):
        if not any(pod.values()):
            continue
        fitting = [n for n, free in left.items() if all(free.get(k, 0) >= v for k, v in pod.items())]
        if not fitting:
            return False
        best = min(fitting, key=lambda n: (sum(left[n].values()), n))
        _add(left[best], pod, -1)
    return True


def template_node_selector(lws: Obj) -> dict[str, str]:
    """The union of the leader and worker templates' nodeSelectors (both must find nodes)."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    selector: dict[str, str] = {}
    for key in ("leaderTemplate", "workerTemplate"):
        selector.update(((lwt.get(key) or {}).get("spec") or {}).get("nodeSelector") or {})
    return selector
