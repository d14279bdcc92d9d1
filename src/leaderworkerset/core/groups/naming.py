"""Names of the objects a LeaderWorkerSet owns, Ordinal identity.

Upstream derives every name from the LWS name and the group ordinal with plain string formatting;
no name is truncated or hashed on the LWS side (the webhook caps the LWS name at 63 characters, and
the StatefulSet controller's `controller-revision-hash` label is what limits worker StatefulSet
names to 52 characters in practice — see `worker_statefulset_name_fits`).
"""

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.keys import NO_ORDINAL, parent_name_and_ordinal
from leaderworkerset.core.objects import Obj, annotations_of, name_of

# A label value is at most 63 characters; the StatefulSet controller labels each pod with
# `<stsName>-<10-character hash>`, so a StatefulSet name longer than this breaks pod creation.
_LABEL_VALUE_MAX = 63
_CONTROLLER_REVISION_SUFFIX = 11
MAX_STATEFULSET_NAME = _LABEL_VALUE_MAX - _CONTROLLER_REVISION_SUFFIX


def leader_statefulset_name(lws_name: str) -> str:
    return lws_name


def leader_pod_name(lws_name: str, group_index: int) -> str:
    """Ordinal leaders are the leader StatefulSet's pods: `<lws>-<i>`."""
    return f"{lws_name}-{group_index}"


def worker_statefulset_name(leader_pod_name: str) -> str:
    """A group's worker StatefulSet is named after its leader pod."""
    return leader_pod_name


def worker_pod_name(leader_pod_name: str, worker_index: int) -> str:
    """Worker ordinals start at 1 (StatefulSet `ordinals.start`), so index j is pod `<leader>-<j>`."""
    return f"{worker_statefulset_name(leader_pod_name)}-{worker_index}"


def leader_address(hostname: str, subdomain: str, namespace: str) -> str:
    """LWS_LEADER_ADDRESS and the leader-address annotation: the leader's DNS name in its subdomain."""
    return f"{hostname}.{subdomain}.{namespace}"


def shared_service_name(lws_name: str) -> str:
    return lws_name


def replica_service_name(leader_pod: Obj) -> str:
    """Per-group headless Service (UniquePerReplica): the leader's subdomain.

    v1.0 names it after `spec.subdomain` (identical to the pod name for Ordinal, the hostname for
    Hash); the pod name is the snapshot rule and the fallback while the subdomain is unset.
    """
    subdomain = (leader_pod.get("spec") or {}).get("subdomain")
    if subdomain:
        return str(subdomain)
    return name_of(leader_pod)


def leader_name_for_worker(worker_pod: Obj) -> str | None:
    """Name of the leader a worker pod belongs to, or None when it cannot be told.

    v1.0 reads the `leader-name` annotation the worker template carries; pods created before that
    annotation existed fall back to stripping the `-<ordinal>` suffix of the pod name.
    """
    annotated = annotations_of(worker_pod).get(c.ANNOTATION_LEADER_NAME)
    if annotated:
        return str(annotated)
    parent, ordinal = parent_name_and_ordinal(name_of(worker_pod))
    if ordinal == NO_ORDINAL:
        return None
    return parent


def group_index_from_leader_name(lws_name: str, pod_name: str) -> int | None:
    """The ordinal of `<lws>-<i>`, or None when the name is not one of this LWS's leaders."""
    parent, ordinal = parent_name_and_ordinal(pod_name)
    if parent != lws_name or ordinal == NO_ORDINAL:
        return None
    return ordinal


def worker_statefulset_name_fits(leader_pod_name: str) -> bool:
    """Whether the StatefulSet controller can label the worker pods of this group."""
    return len(worker_statefulset_name(leader_pod_name)) <= MAX_STATEFULSET_NAME
