"""TPU environment variables injected into TPU-requesting containers.

Pods and containers are the JSON dicts the API server sends. The hostname lists name pods by their
StatefulSet DNS names `<leader>[-<i>].<subdomain>` without a namespace suffix.
"""

import re
from decimal import Decimal, InvalidOperation

from leaderworkerset.api import constants as c
from leaderworkerset.core.gocompat.strconv import go_atoi_field, go_div, go_mod
from leaderworkerset.core.groups.keys import parent_name_and_ordinal
from leaderworkerset.core.groups.state import is_leader_pod
from leaderworkerset.core.objects import MutableObj, annotations_of, labels_of, name_of

DEFAULT_TPU_PROCESS_PORT = 8476
_QUANTITY = re.compile(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\Z")


class TPUEnvError(ValueError):
    """The pod's labels or name do not allow the TPU topology to be computed."""


def _quantity_nonzero(quantity: object) -> bool:
    if isinstance(quantity, bool):
        return False
    if isinstance(quantity, int | float):
        return quantity != 0
    if not isinstance(quantity, str):
        return False
    match = _QUANTITY.match(quantity.strip())
    if match is None:
        return False
    try:
        return Decimal(match.group(1)) != 0
    except InvalidOperation:
        return False


def container_requests_tpus(container: MutableObj) -> bool:
    """A non-zero `google.com/tpu` limit, or request when no limit is set."""
    resources = container.get("resources") or {}
    for kind in ("limits", "requests"):
        if _quantity_nonzero((resources.get(kind) or {}).get(c.TPU_RESOURCE_NAME)):
            return True
    return False


def _all_containers(spec: MutableObj) -> list[MutableObj]:
    return [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]


def pod_requests_tpus(spec: MutableObj) -> bool:
    """Whether any container or init container of the pod spec requests TPUs."""
    return any(container_requests_tpus(container) for container in _all_containers(spec))


def tpu_containers(spec: MutableObj) -> list[MutableObj]:
    """TPU-requesting containers, containers first and then init containers."""
    return [container for container in _all_containers(spec) if container_requests_tpus(container)]


def env_value(container: MutableObj, name: str) -> str | None:
    """The literal value of the first env entry called `name` ("" for valueFrom); None if absent."""
    for entry in container.get("env") or []:
        if entry.get("name") == name:
            return str(entry.get("value") or "")
    return None


def _already_injected(container: MutableObj) -> bool:
    # Upstream treats either variable as proof that the whole set was injected before.
    names = {entry.get("name") for entry in container.get("env") or []}
    return c.ENV_TPU_WORKER_HOSTNAMES in names or c.ENV_TPU_WORKER_ID in names


def _leader_requests_tpus(pod: MutableObj) -> bool:
    return annotations_of(pod).get(c.ANNOTATION_LEADER_REQUESTS_TPUS) == c.ANNOTATION_TRUE


def _append_env(container: MutableObj, entries: list[tuple[str, str]]) -> None:
    container["env"] = [*(container.get("env") or []), *({"name": n, "value": v} for n, v in entries)]


def add_tpu_variables(pod: MutableObj, size: int) -> None:
    """Append the TPU variables to the pod's TPU containers (no-op when already present)."""
    if c.ANNOTATION_SUBGROUP_SIZE in annotations_of(pod):
        _add_subgroup_tpu_variables(pod)
        return
    containers = tpu_containers(pod.get("spec") or {})
    if not containers or _already_injected(containers[0]):
        return
    leader_name, worker_index = _leader_name_and_tpu_index(pod)
    subdomain = str((pod.get("spec") or {}).get("subdomain") or "")
    ports = [
        _user_port(container) or str(DEFAULT_TPU_PROCESS_PORT + i) for i, container in enumerate(containers)
    ]
    include_leader = _leader_requests_tpus(pod) or is_leader_pod(pod)
    hosts = group_hostnames(leader_name, subdomain, size, include_leader)
    hostnames = [host for host in hosts for _ in ports]
    addresses = [f"{host}:{port}" for host in hosts for port in ports]
    for i, container in enumerate(containers):
        entries = [
            (c.ENV_TPU_WORKER_HOSTNAMES, ",".join(hostnames)),
            (c.ENV_TPU_WORKER_ID, str(worker_index * len(containers) + i)),
            (c.ENV_TPU_NAME, leader_name),
            (c.ENV_TPU_PROCESS_ADDRESSES, ",".join(addresses)),
        ]
        if env_value(container, c.ENV_TPU_PROCESS_PORT) is None:
            entries.append((c.ENV_TPU_PROCESS_PORT, ports[i]))
        _append_env(container, entries)


def group_hostnames(leader_name: str, subdomain: str, size: int, include_leader: bool) -> list[str]:
    """DNS names of the TPU hosts of a group, leader first when it holds TPUs."""
    hosts = [f"{leader_name}.{subdomain}"] if include_leader else []
    hosts.extend(f"{leader_name}-{i}.{subdomain}" for i in range(1, size))
    return hosts


def _user_port(container: MutableObj) -> str | None:
    return env_value(container, c.ENV_TPU_PROCESS_PORT)


def _leader_name_and_tpu_index(pod: MutableObj) -> tuple[str, int]:
    name = str((pod.get("metadata") or {}).get("name") or "")
    if is_leader_pod(pod):
        return name, 0
    leader_name, ordinal = parent_name_and_ordinal(name)
    if leader_name == "":
        raise TPUEnvError(f"parsing parent name from pod {name}")
    # A leader without TPUs is not a TPU worker, so worker ids start at the first worker.
    return leader_name, ordinal if _leader_requests_tpus(pod) else ordinal - 1


def _add_subgroup_tpu_variables(pod: MutableObj) -> None:
    containers = tpu_containers(pod.get("spec") or {})
    if not containers or _already_injected(containers[0]):
        return
    container = containers[0]
    name = name_of(pod)
    labels, annotations = labels_of(pod), annotations_of(pod)
    subgroup_size = go_atoi_field(
        annotations.get(c.ANNOTATION_SUBGROUP_SIZE, ""), f"annotation {c.ANNOTATION_SUBGROUP_SIZE}", name
    )
    subgroup_index = go_atoi_field(
        labels.get(c.LABEL_SUBGROUP_INDEX, ""), f"label {c.LABEL_SUBGROUP_INDEX}", name
    )
    worker_index = go_atoi_field(labels.get(c.LABEL_WORKER_INDEX, ""), f"label {c.LABEL_WORKER_INDEX}", name)
    if subgroup_size == 0:
        raise TPUEnvError(f"invalid subgroup size 0 for pod {name}")
    tpu_worker_id = go_mod(worker_index, subgroup_size)
    if worker_index != 0 and not _leader_requests_tpus(pod):
        tpu_worker_id = go_mod(worker_index - 1, subgroup_size)
        subgroup_index = go_div(worker_index - 1, subgroup_size)
    user_port = _user_port(container)
    port = user_port if user_port is not None else str(DEFAULT_TPU_PROCESS_PORT)
    leader_name, hosts = _subgroup_hosts(pod, name, subgroup_size, subgroup_index)
    entries = [
        (c.ENV_TPU_WORKER_HOSTNAMES, ",".join(hosts)),
        (c.ENV_TPU_WORKER_ID, str(tpu_worker_id)),
        (c.ENV_TPU_NAME, leader_name),
        (c.ENV_TPU_PROCESS_ADDRESSES, ",".join(f"{host}:{port}" for host in hosts)),
    ]
    if user_port is None:
        entries.append((c.ENV_TPU_PROCESS_PORT, port))
    _append_env(container, entries)


def _subgroup_hosts(
    pod: MutableObj, name: str, subgroup_size: int, subgroup_index: int
) -> tuple[str, list[str]]:
    """Leader name and the hostnames of the pod's own subgroup."""
    subdomain = str((pod.get("spec") or {}).get("subdomain") or "")
    start = subgroup_size * subgroup_index + 1
    end = subgroup_size * (subgroup_index + 1)
    hosts: list[str] = []
    leader_name = name
    if is_leader_pod(pod):
        hosts.append(f"{leader_name}.{subdomain}")
        end -= 1
    else:
        leader_name, _ = parent_name_and_ordinal(name)
        if leader_name == "":
            raise TPUEnvError(f"parsing parent name from pod {name}")
        if _leader_requests_tpus(pod) and subgroup_index == 0:
            # Subgroup 0 holds the leader, which takes the first slot.
            hosts.append(f"{leader_name}.{subdomain}")
            end -= 1
        elif _leader_requests_tpus(pod):
            # Every later subgroup shifts left by the slot the leader took in subgroup 0.
            start -= 1
            end -= 1
    hosts.extend(f"{leader_name}-{i}.{subdomain}" for i in range(start, end + 1))
    return leader_name, hosts
