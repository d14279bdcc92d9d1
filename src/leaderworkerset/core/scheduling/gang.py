"""Gang-scheduling decisions shared by both scheduler providers, and Volcano's PodGroups.

Providers fail with a `SchedulingError` that carries the `WorkloadSchedulingCreated` reason the LWS
controller reports; `unexpected_owner` marks upstream's `ErrUnexpectedPodGroupOwner` (a PodGroup of
that name belongs to someone else), which the pod controller turns into an event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import (
    MutableObj,
    annotations_of,
    controller_owner,
    is_deleting,
    is_hash,
    labels_of,
    lws_owner_reference,
    name_of,
    namespace_of,
    pod_owner_reference,
    same_controller,
)
from leaderworkerset.core.scheduling.mode import SchedulingModeError, scheduling_mode
from leaderworkerset.core.scheduling.podrequests import group_min_resources

VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
VOLCANO_POD_GROUP_KIND = "PodGroup"


class SchedulingError(Exception):
    """A provider step failed; `reason` is the condition reason, the message its text."""

    def __init__(self, reason: str, message: str, *, unexpected_owner: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.unexpected_owner = unexpected_owner


# ----- owners ----------------------------------------------------------------------------------------


class Ownership(Enum):
    OURS = "ours"  # controlled by the expected owner: reuse it
    PREVIOUS = "previous"  # a same-named, earlier incarnation of the owner: wait for GC
    UNEXPECTED = "unexpected"  # someone else's (or nobody's): never touch it
    TERMINATING = "terminating"  # going away: wait


def ownership(existing: MutableObj, expected: Mapping[str, Any]) -> Ownership:
    if is_deleting(existing):
        return Ownership.TERMINATING
    owner = controller_owner(existing)
    if same_controller(owner, expected):
        return Ownership.OURS
    if owner is not None and all(owner.get(k) == expected.get(k) for k in ("apiVersion", "kind", "name")):
        return Ownership.PREVIOUS
    return Ownership.UNEXPECTED


def check_existing_pod_group(existing: MutableObj, expected_owner: Mapping[str, Any]) -> None:
    """Raise unless `existing` is a live PodGroup controlled by `expected_owner`."""
    key = f"{namespace_of(existing)}/{name_of(existing)}"
    state = ownership(existing, expected_owner)
    owner_text = f"{expected_owner.get('kind')} {expected_owner.get('name')} ({expected_owner.get('uid')})"
    if state is Ownership.TERMINATING:
        raise SchedulingError(c.REASON_POD_GROUP_CREATE_FAILED, f"PodGroup {key} is still terminating")
    if state is Ownership.PREVIOUS:
        raise SchedulingError(
            c.REASON_POD_GROUP_CREATE_FAILED,
            f"PodGroup {key} belongs to a previous {expected_owner.get('kind')} with the same name; "
            "waiting for its garbage collection",
        )
    if state is Ownership.UNEXPECTED:
        raise SchedulingError(
            c.REASON_POD_GROUP_CREATE_FAILED,
            f"unexpected PodGroup owner: PodGroup {key} is not controlled by {owner_text}",
            unexpected_owner=True,
        )


# ----- Volcano ---------------------------------------------------------------------------------------


def volcano_pod_group_name(lws_name: str, group_index: str, revision: str) -> str:
    """`<lws>-<groupIndex>-<revisionKey>`: stamped on pods by the webhook, and the PodGroup's name."""
    return f"{lws_name}-{group_index}-{revision}"


def _size(lws: Mapping[str, Any]) -> int:
    size = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size")
    return size if isinstance(size, int) else 1


def _volcano_annotations(lws: MutableObj) -> dict[str, str]:
    return {k: v for k, v in annotations_of(lws).items() if k.startswith(c.VOLCANO_ANNOTATION_PREFIX)}


def volcano_pod_group(
    lws: MutableObj, group_index: str, revision: str, owner: MutableObj, *, min_member: int
) -> MutableObj:
    """A `scheduling.volcano.sh/v1beta1` PodGroup for one group of `lws`."""
    spec: MutableObj = {"minMember": min_member, "minResources": group_min_resources(lws)}
    queue = annotations_of(lws).get(c.ANNOTATION_VOLCANO_QUEUE_NAME)
    if queue is not None:
        spec["queue"] = queue
    meta: MutableObj = {
        "name": volcano_pod_group_name(name_of(lws), group_index, revision),
        "namespace": namespace_of(lws),
        "labels": {
            c.LABEL_SET_NAME: name_of(lws),
            c.LABEL_GROUP_INDEX: group_index,
            c.LABEL_TEMPLATE_REVISION_HASH: revision,
        },
        "ownerReferences": [owner],
    }
    annotations = _volcano_annotations(lws)
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": VOLCANO_API_VERSION, "kind": VOLCANO_POD_GROUP_KIND, "metadata": meta, "spec": spec}


def volcano_leader_pod_group(lws: MutableObj, leader: MutableObj) -> MutableObj:
    """Without spec.scheduling, and with it for Hash: the leader's group, controlled by the leader pod.

    With startupPolicy LeaderReady the leader must be able to start alone, so minMember is 1;
    minResources still covers the whole group, so Volcano does not start a leader whose workers
    cannot fit.
    """
    labels = labels_of(leader)
    leader_ready = (lws.get("spec") or {}).get("startupPolicy") == c.STARTUP_POLICY_LEADER_READY
    return volcano_pod_group(
        lws,
        labels.get(c.LABEL_GROUP_INDEX, ""),
        labels.get(c.LABEL_TEMPLATE_REVISION_HASH, ""),
        pod_owner_reference(leader),
        min_member=1 if leader_ready else _size(lws),
    )


def volcano_leader_pod_group_wanted(lws: MutableObj) -> bool:
    """Whether the pod controller makes the leader's PodGroup: always without spec.scheduling;
    with it only for Hash, whose groups the LWS controller cannot name in advance."""
    return (lws.get("spec") or {}).get("scheduling") is None or is_hash(lws)


def inject_volcano_group_name(pod: MutableObj) -> None:
    """Pod webhook (Volcano): name the group's PodGroup on the pod, from its own labels."""
    labels = labels_of(pod)
    name = volcano_pod_group_name(
        labels.get(c.LABEL_SET_NAME, ""),
        labels.get(c.LABEL_GROUP_INDEX, ""),
        labels.get(c.LABEL_TEMPLATE_REVISION_HASH, ""),
    )
    meta = pod.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), c.ANNOTATION_SCHEDULING_GROUP_NAME: name}


def leader_pod_group_name(leader: MutableObj) -> str:
    """The name the pod webhook stamped on the leader (the PodGroup made without spec.scheduling)."""
    return annotations_of(leader).get(c.ANNOTATION_SCHEDULING_GROUP_NAME, "")


@dataclass(frozen=True)
class VolcanoCapability:
    path: str
    message: str
    rule: str


_VOLCANO = "the Volcano provider"


def volcano_unsupported(scheduling: Mapping[str, Any]) -> list[VolcanoCapability]:
    """What of `spec.scheduling` Volcano cannot honour (the typed path supports replica-level gangs).

    Raises SchedulingModeError for an ambiguous level. Shared by the webhook (admission messages)
    and the controller (UnsupportedProviderCapability for objects admitted before the provider).
    """
    mode = scheduling_mode(dict(scheduling))
    path = "spec.scheduling"
    if mode != c.SCHEDULING_MODE_REPLICA:
        return [
            VolcanoCapability(
                path, f"{_VOLCANO} supports the typed API only at replica level", "volcano-replica-only"
            )
        ]
    replica = scheduling.get("replica") or {}
    path += ".replica"
    found: list[VolcanoCapability] = []
    if (replica.get("schedulingPolicy") or {}).get("basic") is not None:
        found.append(
            VolcanoCapability(
                f"{path}.schedulingPolicy", f"{_VOLCANO} does not support Basic policy", "volcano-no-basic"
            )
        )
    for name, what, rule in (
        ("schedulingConstraints", "typed scheduling constraints", "volcano-no-constraints"),
        ("disruptionMode", "typed disruption mode", "volcano-no-disruption-mode"),
    ):
        if replica.get(name) is not None:
            found.append(VolcanoCapability(f"{path}.{name}", f"{_VOLCANO} does not support {what}", rule))
    if replica.get("resourceClaims"):
        found.append(
            VolcanoCapability(
                f"{path}.resourceClaims",
                f"{_VOLCANO} does not support shared resource claims",
                "volcano-no-claims",
            )
        )
    return found


def volcano_replica_pod_groups(lws: MutableObj, replicas: int, revision: str) -> list[MutableObj]:
    """With spec.scheduling and Volcano: one PodGroup per group index, controlled by the LWS.

    Hash groups have no index to enumerate (their key is drawn when the leader is admitted), so
    none are made here: the pod controller makes each group's own (`volcano_leader_pod_group`).
    The configuration is still checked, so an unsupported one is reported before any leader.
    """
    scheduling = (lws.get("spec") or {}).get("scheduling")
    if scheduling is None:
        return []
    try:
        unsupported = volcano_unsupported(scheduling)
    except SchedulingModeError as err:
        raise SchedulingError(c.REASON_INVALID_SCHEDULING_CONFIGURATION, str(err)) from err
    if unsupported:
        raise SchedulingError(
            c.REASON_UNSUPPORTED_PROVIDER_CAPABILITY, "; ".join(f"{u.path}: {u.message}" for u in unsupported)
        )
    if is_hash(lws):
        return []
    owner = lws_owner_reference(lws)
    return [
        volcano_pod_group(lws, str(i), revision, owner, min_member=_size(lws))
        for i in range(max(replicas, 0))
    ]


# ----- the WorkloadSchedulingCreated condition ---------------------------------------

MESSAGE_SCHEDULING_PREREQUISITES_CREATED = "scheduling prerequisites created"
MESSAGE_NO_PROVIDER = "spec.scheduling requires a configured scheduler provider"


def scheduling_conditions(
    lws: MutableObj, status: str, reason: str, message: str, transition_time: str
) -> list[MutableObj] | None:
    """The LWS conditions with WorkloadSchedulingCreated set; None when it is already so (no write)."""
    conditions = [dict(cond) for cond in ((lws.get("status") or {}).get("conditions") or [])]
    generation = int((lws.get("metadata") or {}).get("generation") or 0)
    wanted = {"status": status, "reason": reason, "message": message, "observedGeneration": generation}
    for i, current in enumerate(conditions):
        if current.get("type") != c.CONDITION_WORKLOAD_SCHEDULING_CREATED:
            continue
        if all(current.get(k) == v for k, v in wanted.items()):
            return None
        moved = current.get("status") != status
        time = transition_time if moved else current.get("lastTransitionTime", transition_time)
        conditions[i] = {**current, **wanted, "lastTransitionTime": time}
        return conditions
    conditions.append(
        {"type": c.CONDITION_WORKLOAD_SCHEDULING_CREATED, **wanted, "lastTransitionTime": transition_time}
    )
    return conditions
