"""Labels and LWS environment variables the pod webhook injects.

Everything works on the pod JSON dict in place. The env rule matters for `$(VAR)` expansion: the
three LWS variables go first, in a fixed order, and replace user entries of the same name.
"""

from leaderworkerset.api import constants as c
from leaderworkerset.core.desired.affinity import set_exclusive_affinities
from leaderworkerset.core.gocompat import strconv
from leaderworkerset.core.groups import keys, naming, subgroup
from leaderworkerset.core.groups.state import is_hash_pod, is_leader_pod
from leaderworkerset.core.objects import MutableObj, annotations_of, name_of, namespace_of


class PodMutationError(ValueError):
    """The pod lacks what the webhook needs; the message is the admission denial text."""


# Read-only accessors come from core.objects and core.groups.state (kept under the names this
# module's callers use); `metadata`, `labels` and `spec` below are for writing: they create the
# dict when it is missing.
annotations = annotations_of
pod_name = name_of
is_leader = is_leader_pod  # leaders carry worker-index "0" from their template


def _writable(parent: MutableObj, key: str) -> MutableObj:
    """`parent[key]` as a dict the caller may write into, created (or replacing a non-dict)."""
    child = parent.get(key)
    if not isinstance(child, dict):
        child = {}
        parent[key] = child
    return child


def pod_metadata(pod: MutableObj) -> MutableObj:
    return _writable(pod, "metadata")


def labels(pod: MutableObj) -> dict[str, str]:
    return _writable(pod_metadata(pod), "labels")


def spec(pod: MutableObj) -> MutableObj:
    return _writable(pod, "spec")


def group_size(pod: MutableObj) -> int:
    """The `size` annotation as an int; its absence or a bad value rejects the pod."""
    size = annotations(pod).get(c.ANNOTATION_SIZE)
    if size is None:
        raise PodMutationError(f"size annotation is unexpectedly missing for pod {pod_name(pod)}")
    try:
        return strconv.go_atoi_field(size, f"annotation {c.ANNOTATION_SIZE}", pod_name(pod))
    except strconv.GoParseError as err:
        raise PodMutationError(str(err)) from err


def name_ordinal(pod: MutableObj) -> int:
    _, ordinal = keys.parent_name_and_ordinal(pod_name(pod))
    if ordinal == keys.NO_ORDINAL:
        raise PodMutationError(f"parsing pod ordinal for pod {pod_name(pod)}")
    return ordinal


def label_ordinal_leader(pod: MutableObj) -> str:
    """Ordinal leader: group-index from the name, group-key from namespace/name (both overwritten)."""
    pod_labels = labels(pod)
    pod_labels[c.LABEL_GROUP_INDEX] = str(name_ordinal(pod))
    key = keys.group_key(str(pod_metadata(pod).get("namespace") or ""), pod_name(pod))
    pod_labels[c.LABEL_GROUP_KEY] = key
    return key


def label_hash_leader(pod: MutableObj, token: str) -> str:
    """Hash leader: a random key names the group; the hostname is fixed now, as it is immutable."""
    key = keys.hash_group_key(str(pod_metadata(pod).get("namespace") or ""), token)
    pod_labels = labels(pod)
    pod_labels[c.LABEL_GROUP_KEY] = key
    pod_labels[c.LABEL_GROUP_INDEX] = key
    pod_spec = spec(pod)
    if not pod_spec.get("hostname"):
        pod_spec["hostname"] = keys.hash_leader_hostname(pod_labels.get(c.LABEL_SET_NAME, ""), key)
    return key


def gate_hash_leader(pod: MutableObj) -> None:
    """Hash leader: admitted behind the group-replacement scheduling gate (the pod controller
    lifts it per the replacement policy), and cheapest to delete while it waits, so a scale-down
    removes waiting replacements before running groups."""
    pod_spec = spec(pod)
    gates = list(pod_spec.get("schedulingGates") or [])
    if all(gate.get("name") != c.SCHEDULING_GATE_GROUP_REPLACEMENT for gate in gates):
        gates.append({"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT})
    pod_spec["schedulingGates"] = gates
    meta = pod_metadata(pod)
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        c.ANNOTATION_POD_DELETION_COST: c.POD_DELETION_COST_WAITING_LEADER,
    }


def apply_unique_subdomain(pod: MutableObj) -> None:
    """UniquePerReplica: the leader's subdomain is its per-group Service (pod name or Hash hostname)."""
    if annotations(pod).get(c.ANNOTATION_SUBDOMAIN_POLICY) != c.SUBDOMAIN_UNIQUE_PER_REPLICA:
        return
    pod_spec = spec(pod)
    pod_spec["subdomain"] = pod_spec.get("hostname", "") if is_hash_pod(pod) else pod_name(pod)


def apply_group_exclusive_placement(pod: MutableObj, key: str) -> None:
    topology_key = annotations(pod).get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY)
    if topology_key is not None:
        set_exclusive_affinities(spec(pod), key, topology_key, c.LABEL_GROUP_KEY)


def _set_subgroup(pod: MutableObj, index: int, anchor: str) -> None:
    pod_labels = labels(pod)
    pod_labels[c.LABEL_SUBGROUP_INDEX] = str(index)
    key = keys.subgroup_key(anchor, index)
    pod_labels[c.LABEL_SUBGROUP_KEY] = key
    topology_key = annotations(pod).get(c.ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY)
    if topology_key is not None:
        set_exclusive_affinities(spec(pod), key, topology_key, c.LABEL_SUBGROUP_KEY)


def _needs_subgroup(pod: MutableObj) -> bool:
    return c.ANNOTATION_SUBGROUP_SIZE in annotations(pod) and not labels(pod).get(c.LABEL_SUBGROUP_INDEX)


def label_leader_subgroup(pod: MutableObj, key: str) -> None:
    """Leader joins subgroup 0 unless LeaderExcluded; Hash groups anchor on the group key."""
    if not _needs_subgroup(pod):
        return
    index = subgroup.leader_subgroup_index(annotations(pod).get(c.ANNOTATION_SUBGROUP_POLICY_TYPE))
    if index is None:
        return
    _set_subgroup(pod, index, key if is_hash_pod(pod) else pod_name(pod))


def label_worker(pod: MutableObj, size: int) -> None:
    """Worker: worker-index from the name ordinal, then its subgroup."""
    worker_index = name_ordinal(pod)
    labels(pod)[c.LABEL_WORKER_INDEX] = str(worker_index)
    if not _needs_subgroup(pod):
        return
    try:
        subgroup_size = strconv.go_atoi_field(
            annotations(pod)[c.ANNOTATION_SUBGROUP_SIZE],
            f"annotation {c.ANNOTATION_SUBGROUP_SIZE}",
            pod_name(pod),
        )
    except strconv.GoParseError as err:
        raise PodMutationError(str(err)) from err
    if subgroup_size == 0:
        raise PodMutationError(f"invalid subgroup size 0 for pod {pod_name(pod)}")
    anchor = annotations(pod).get(c.ANNOTATION_LEADER_NAME, "")
    if is_hash_pod(pod):
        anchor = labels(pod).get(c.LABEL_GROUP_KEY, "")
    _set_subgroup(pod, subgroup.worker_subgroup_index(size, subgroup_size, worker_index), anchor)


def pod_leader_address(pod: MutableObj) -> str:
    """LWS_LEADER_ADDRESS: the stamped annotation (workers), else derived from the pod's own DNS name."""
    stamped = annotations(pod).get(c.ANNOTATION_LEADER_ADDRESS, "")
    if stamped:
        return stamped
    pod_labels = labels(pod)
    if c.LABEL_GROUP_INDEX not in pod_labels:
        raise PodMutationError(f"no group index label found for pod {pod_name(pod)}")
    host = f"{pod_labels.get(c.LABEL_SET_NAME, '')}-{pod_labels[c.LABEL_GROUP_INDEX]}"
    pod_spec = spec(pod)
    if is_leader(pod) and pod_spec.get("hostname"):
        host = str(pod_spec["hostname"])
    return naming.leader_address(host, str(pod_spec.get("subdomain") or ""), namespace_of(pod))


def _klog_ref(pod: MutableObj) -> str:
    namespace = pod_metadata(pod).get("namespace") or ""
    return f"{namespace}/{pod_name(pod)}" if namespace else pod_name(pod)


_ENV_FAILURE = "Failure constructing environment variables, no {what} found for pod {ref}"


def lws_env(pod: MutableObj, address: str) -> list[MutableObj]:
    """The three LWS variables in their fixed order."""
    pod_annotations, pod_labels = annotations(pod), labels(pod)
    if c.ANNOTATION_SIZE not in pod_annotations:
        raise PodMutationError(_ENV_FAILURE.format(what="size annotation", ref=_klog_ref(pod)))
    if c.LABEL_WORKER_INDEX not in pod_labels:
        raise PodMutationError(_ENV_FAILURE.format(what="worker index label", ref=_klog_ref(pod)))
    return [
        {"name": c.ENV_LWS_LEADER_ADDRESS, "value": address},
        {"name": c.ENV_LWS_GROUP_SIZE, "value": pod_annotations[c.ANNOTATION_SIZE]},
        {"name": c.ENV_LWS_WORKER_INDEX, "value": pod_labels[c.LABEL_WORKER_INDEX]},
    ]


def merge_env_front(existing: list[MutableObj], injected: list[MutableObj]) -> list[MutableObj]:
    """Injected entries first; then user entries whose name is new (first occurrence wins)."""
    seen = {entry["name"] for entry in injected}
    merged = [dict(entry) for entry in injected]
    for entry in existing:
        if entry.get("name") not in seen:
            merged.append(entry)
            seen.add(entry.get("name"))
    return merged


def add_lws_env(pod: MutableObj, address: str) -> None:
    """Put the LWS variables at the front of every container, then every init container."""
    injected = lws_env(pod, address)
    pod_spec = spec(pod)
    for field in ("containers", "initContainers"):
        for container in pod_spec.get(field) or []:
            container["env"] = merge_env_front(container.get("env") or [], injected)
