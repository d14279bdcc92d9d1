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


def group_accelerators(lws: Obj) -> Accelerators:
    """One group of this LWS: its leader (the leader template, else the worker one) plus size-1
    workers."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    base = "spec.leaderWorkerTemplate"
    worker = (lwt.get("workerTemplate") or {}).get("spec") or {}
    if lwt.get("leaderTemplate") is not None:
        total = pod_accelerators(
            (lwt["leaderTemplate"] or {}).get("spec") or {}, f"{base}.leaderTemplate.spec"
        )
    else:
        total = pod_accelerators(worker, f"{base}.workerTemplate.spec")
    _add(total, pod_accelerators(worker, f"{base}.workerTemplate.spec"), lws_size(lws) - 1)
    return total


def _selector_matches(node: Obj, selector: Mapping[str, str]) -> bool:
    labels = labels_of(node)
    return all(labels.get(key) == value for key, value in selector.items())


def free_accelerators(
    nodes: Iterable[Obj], pods: Iterable[Obj], node_selector: Mapping[str, str]
) -> Accelerators:
    """Allocatable minus what bound, non-terminated pods request, summed over the schedulable
    nodes that carry `node_selector` (affinity and taints are not evaluated)."""
    free: Accelerators = {}
    eligible = set()
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable") or not _selector_matches(node, node_selector):
            continue
        eligible.add(name_of(node))
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        _add(free, pod_accelerators({"containers": [{"resources": {"requests": allocatable}}]}))
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") not in eligible:
            continue
        if (pod.get("status") or {}).get("phase") in _TERMINAL_PHASES:
            continue
        _add(free, pod_accelerators(pod.get("spec") or {}, f"pod {name_of(pod)} spec"), -1)
    return free


def template_node_selector(lws: Obj) -> dict[str, str]:
    """The union of the leader and worker templates' nodeSelectors (both must find nodes)."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    selector: dict[str, str] = {}
    for key in ("leaderTemplate", "workerTemplate"):
        selector.update(((lwt.get(key) or {}).get("spec") or {}).get("nodeSelector") or {})
    return selector
