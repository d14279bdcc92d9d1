"""What a pod asks the scheduler for, as Kubernetes' resource helpers (`PodRequests`) compute it.

Volcano admits a PodGroup only when the cluster can hold its `minResources`; upstream fills that
with the effective requests of one leader plus `size - 1` workers. Effective requests are not the
plain sum of container requests:

* regular containers are summed; restartable init containers (sidecars, `restartPolicy: Always`)
  run alongside them, so they are added as well;
* a regular init container runs alone with the sidecars started before it, so the pod needs the
  maximum of (containers + sidecars) and each (init container + earlier sidecars);
* pod-level `spec.resources.requests` (cpu, memory, hugepages) replace the container aggregate;
* `spec.overhead` (RuntimeClass) comes on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderworkerset.core.gocompat.quantity import (
    Quantity,
    QuantityError,
    add_quantities,
    compare_quantities,
    parse_quantity,
)

Resources = dict[str, Quantity]

_RESTART_ALWAYS = "Always"
_POD_LEVEL_RESOURCES = ("cpu", "memory")
_HUGEPAGES_PREFIX = "hugepages-"


class RequestsError(ValueError):
    """A request in a pod template is not a quantity; the message names the field."""


def _parse_list(values: object, path: str) -> Resources:
    if not isinstance(values, Mapping):
        return {}
    parsed: Resources = {}
    for name, text in values.items():
        try:
            parsed[str(name)] = parse_quantity(str(text))
        except QuantityError as err:
            raise RequestsError(f"{path}[{name}]: invalid quantity {text!r}: {err}") from err
    return parsed


def _add_into(total: Resources, extra: Resources) -> None:
    for name, quantity in extra.items():
        total[name] = add_quantities(total[name], quantity) if name in total else quantity


def _max_into(total: Resources, candidate: Resources) -> None:
    for name, quantity in candidate.items():
        if name not in total or compare_quantities(quantity, total[name]) > 0:
            total[name] = quantity


def _container_requests(container: object, path: str) -> Resources:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    return _parse_list(requests, f"{path}.resources.requests")


def _containers(spec: Mapping[str, Any], field: str) -> list[Any]:
    value = spec.get(field)
    return value if isinstance(value, list) else []


def _is_pod_level(name: str) -> bool:
    return name in _POD_LEVEL_RESOURCES or name.startswith(_HUGEPAGES_PREFIX)


def pod_requests(spec: Mapping[str, Any], path: str = "spec") -> Resources:
    """Effective requests of a pod with this spec (containers, init containers, pod level, overhead)."""
    total: Resources = {}
    for i, container in enumerate(_containers(spec, "containers")):
        _add_into(total, _container_requests(container, f"{path}.containers[{i}]"))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for i, container in enumerate(_containers(spec, "initContainers")):
        requests = _container_requests(container, f"{path}.initContainers[{i}]")
        if isinstance(container, Mapping) and container.get("restartPolicy") == _RESTART_ALWAYS:
            _add_into(total, requests)
            _add_into(sidecars, requests)
            running = dict(sidecars)
        else:
            running = dict(requests)
            _add_into(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    pod_level = spec.get("resources")
    pod_level_requests = pod_level.get("requests") if isinstance(pod_level, Mapping) else None
    for name, quantity in _parse_list(pod_level_requests, f"{path}.resources.requests").items():
        if _is_pod_level(name):
            total[name] = quantity
    _add_into(total, _parse_list(spec.get("overhead"), f"{path}.overhead"))
    return total


def _template_spec(template: object) -> Mapping[str, Any]:
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def group_min_resources(lws: Mapping[str, Any]) -> dict[str, str]:
    """One leader plus `size - 1` workers, as canonical quantity strings (a PodGroup's minResources)."""
    spec = lws.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    base = "spec.leaderWorkerTemplate"
    worker_template = lwt.get("workerTemplate")
    if lwt.get("leaderTemplate") is not None:
        total = pod_requests(_template_spec(lwt["leaderTemplate"]), f"{base}.leaderTemplate.spec")
    else:
        total = pod_requests(_template_spec(worker_template), f"{base}.workerTemplate.spec")
    size = lwt.get("size")
    workers = (size if isinstance(size, int) else 1) - 1
    if workers > 0:
        worker = pod_requests(_template_spec(worker_template), f"{base}.workerTemplate.spec")
        for _ in range(workers):
            _add_into(total, worker)
    return {name: quantity.canonical() for name, quantity in total.items()}
