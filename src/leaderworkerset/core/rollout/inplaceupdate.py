"""Diff-aware in-place updates of an Ordinal LWS's groups (issue 27, `update-strategy: InPlaceIfPossible`).

How a group moves to the new revision without a pod being recreated, in the StatefulSet
controller's own terms:

* while any group still waits for its in-place update the leader StatefulSet's partition is held at
  its replicas (`holds_partition`), so the StatefulSet controller replaces no leader;
* a group's worker StatefulSet gets the new template with its partition held at its replicas; once
  its controller published the new `updateRevision`, each worker pod is patched (images, template
  metadata) and labelled with that revision, and the partition drops to 0: every pod already is at
  the update revision, nothing is recreated;
* the leader pod is patched last, with the leader StatefulSet's `updateRevision`: its revision
  label marks the group done, so a manager killed halfway resumes the started group and never
  starts a finished one again;
* a group counts unavailable from its first patch until every container runs its new image and is
  Ready (`pod_settled`); at most max(maxUnavailable, 1) groups are unavailable at a time.

Once no group waits, the normal rollout decision takes over and finds every group updated: the
partition drops to 0 and the StatefulSets report the update revision as current, which is what
upstream's controller sees after a swap.

Everything here is pure: the controller (`controllers/leaderworkerset/inplace.py`) reads and writes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import pod_ready
from leaderworkerset.core.lifecycle.restart import IN_PLACE_RESTARTS_PENDING, restart_total
from leaderworkerset.core.objects import Obj, annotations_of, is_hash, labels_of, revision_key_of
from leaderworkerset.core.rollout.inplace import Change, Classification, UpdatePath, classify
from leaderworkerset.core.rollout.revision import without_live_settings

CONTROLLER_REVISION_HASH = "controller-revision-hash"  # the StatefulSet controller's pod label
STRATEGIES = (ext.UPDATE_STRATEGY_IN_PLACE, ext.UPDATE_STRATEGY_RECREATE)
# The pod conditions of a resize the kubelet has not finished (InPlacePodVerticalScaling).
RESIZE_CONDITIONS = frozenset({"PodResizePending", "PodResizeInProgress"})


def strategy_problem(value: str, obj: Obj) -> str | None:
    """The rule an `update-strategy` value breaks on this LWS, or None."""
    if value not in STRATEGIES:
        return f"must be one of {', '.join(STRATEGIES)}"
    if value == ext.UPDATE_STRATEGY_IN_PLACE and is_hash(obj):
        return "in-place updates need groupIdentity Ordinal (a Hash set rolls through its Deployment)"
    return None


def wants_in_place(lws: Obj) -> bool:
    value = annotations_of(lws).get(ext.ANNOTATION_UPDATE_STRATEGY)
    return value == ext.UPDATE_STRATEGY_IN_PLACE and strategy_problem(value, lws) is None


def pod_template(spec: Obj, role: str) -> Obj:
    """The pod template of `role` in a revision spec; a set without a leader template makes its
    leader from the worker template."""
    lwt = spec.get("leaderWorkerTemplate") or {}
    if role == c.ROLE_LEADER and lwt.get("leaderTemplate") is not None:
        return dict(lwt["leaderTemplate"])
    return dict(lwt.get("workerTemplate") or {})


@dataclass(frozen=True)
class TemplateDelta:
    """What an in-place update writes on a pod (or a worker StatefulSet's template) of one role:
    label/annotation values (None removes), container images by name, and the new tolerations."""

    labels: Mapping[str, str | None]
    annotations: Mapping[str, str | None]
    images: Mapping[str, str]  # container name → image, regular containers
    init_images: Mapping[str, str]  # sidecars (restartable init containers)
    tolerations: Sequence[Obj] | None
    # container name → resources, regular containers, where the template changed them (resize)
    resources: Mapping[str, Obj] = field(default_factory=dict)


def _metadata_delta(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str | None]:
    delta: dict[str, str | None] = {key: None for key in old if key not in new}
    delta.update({key: value for key, value in new.items() if old.get(key) != value})
    return delta


def _images(containers: Sequence[Obj]) -> dict[str, str]:
    return {str(cont.get("name")): str(cont.get("image") or "") for cont in containers}


def settle_patch(pod: Obj) -> dict[str, Any] | None:
    """Once the pod's group settled on the new revision: its restarts so far were the update's, and
    any further one is a failure again."""
    if annotations_of(pod).get(ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS) != IN_PLACE_RESTARTS_PENDING:
        return None
    return {"metadata": {"annotations": {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: str(restart_total(pod))}}}


def restarts_containers(delta: TemplateDelta, pod: Obj) -> bool:
    """The delta changes the image of one of the pod's containers (the kubelet restarts it)."""
    spec = pod.get("spec") or {}
    return bool(
        _changed_images(spec.get("containers") or [], delta.images)
        or _changed_images(spec.get("initContainers") or [], delta.init_images)
    )


def template_delta(old: Obj, new: Obj) -> TemplateDelta:
    """From pod template `old` to `new` (a change `inplace.classify` found in place)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    tolerations = new_spec.get("tolerations")
    return TemplateDelta(
        labels=_metadata_delta(old_meta.get("labels") or {}, new_meta.get("labels") or {}),
        annotations=_metadata_delta(old_meta.get("annotations") or {}, new_meta.get("annotations") or {}),
        images=_images(new_spec.get("containers") or []),
        init_images={
            str(cont.get("name")): str(cont.get("image") or "")
            for cont in new_spec.get("initContainers") or []
            if cont.get("restartPolicy") == "Always"
        },
        tolerations=None if tolerations == old_spec.get("tolerations") else list(tolerations or []),
        resources=_changed_resources(old_spec.get("containers") or [], new_spec.get("containers") or []),
    )


def _changed_resources(old: Sequence[Obj], new: Sequence[Obj]) -> dict[str, Obj]:
    before = {str(cont.get("name")): cont.get("resources") or {} for cont in old}
    return {
        str(cont.get("name")): dict(cont.get("resources") or {})
        for cont in new
        if (cont.get("resources") or {}) != before.get(str(cont.get("name")), {})
    }


def resize_patch(pod: Obj, delta: TemplateDelta) -> dict[str, Any] | None:
    """The patch of the pod's `resize` subresource that gives its containers the new CPU/memory
    (None: they have it). The kubelet applies it to the running containers."""
    containers = [
        {"name": str(cont.get("name")), "resources": delta.resources[str(cont.get("name"))]}
        for cont in (pod.get("spec") or {}).get("containers") or []
        if str(cont.get("name")) in delta.resources
        and (cont.get("resources") or {}) != delta.resources[str(cont.get("name"))]
    ]
    return {"spec": {"containers": containers}} if containers else None


def _changed_images(current: Sequence[Obj], wanted: Mapping[str, str]) -> list[dict[str, str]]:
    return [
        {"name": str(cont.get("name")), "image": wanted[str(cont.get("name"))]}
        for cont in current
        if str(cont.get("name")) in wanted and cont.get("image") != wanted[str(cont.get("name"))]
    ]


def _metadata_patch(current: Mapping[str, str], delta: Mapping[str, str | None]) -> dict[str, str | None]:
    return {key: value for key, value in delta.items() if current.get(key) != value}


def pod_patch(
    pod: Obj, delta: TemplateDelta, revision_labels: Mapping[str, str], *, knock_on: int = 0
) -> dict[str, Any] | None:
    """The strategic-merge patch that brings a running pod to the new template (None: it is there).

    `revision_labels` are the template-revision and StatefulSet revision labels of the new revision.
    Containers whose image changes are restarted by the kubelet, and `knock_on` says the pod's leader
    restarts too (multi-host workers commonly exit when their leader goes away, maybe more than once
    while it starts): such a pod is marked pending, and the restart policy takes none of its restarts
    for a failure until its group has settled.
    """
    spec = pod.get("spec") or {}
    containers = _changed_images(spec.get("containers") or [], delta.images)
    init_containers = _changed_images(spec.get("initContainers") or [], delta.init_images)
    labels = _metadata_patch(labels_of(pod), {**delta.labels, **revision_labels})
    annotations = _metadata_patch(annotations_of(pod), delta.annotations)
    spec_patch: dict[str, Any] = {}
    if containers:
        spec_patch["containers"] = containers
    if init_containers:
        spec_patch["initContainers"] = init_containers
    if delta.tolerations is not None and spec.get("tolerations") != delta.tolerations:
        spec_patch["tolerations"] = list(delta.tolerations)
    if containers or init_containers or knock_on:
        # Until the group settles its restarts are the update's (`settle_patch` ends that).
        annotations[ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = IN_PLACE_RESTARTS_PENDING
    if not (spec_patch or labels or annotations):
        return None
    metadata: dict[str, Any] = {}
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    patch: dict[str, Any] = {"metadata": metadata}
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


def template_patch(
    old_template: Obj, delta: TemplateDelta, revision_labels: Mapping[str, str]
) -> dict[str, Any]:
    """The strategic-merge patch of a StatefulSet pod template made from `old_template` (the old
    revision's) that applies the delta: containers merge by name, a None value removes a key, the
    tolerations list is replaced. It names only what the delta changes, so the live template
    (which its builder extended) needs no read."""
    old_spec = old_template.get("spec") or {}
    meta: dict[str, Any] = {}
    for part, changes in (
        ("labels", {**delta.labels, **revision_labels}),
        ("annotations", delta.annotations),
    ):
        if changes:
            meta[part] = dict(changes)
    spec: dict[str, Any] = {}
    old_resources = {
        str(cont.get("name")): cont.get("resources") or {} for cont in old_spec.get("containers") or []
    }
    containers = []
    for cont in old_spec.get("containers") or []:
        name = str(cont.get("name"))
        change: dict[str, Any] = {"name": name}
        if name in delta.images and delta.images[name] != cont.get("image"):
            change["image"] = delta.images[name]
        if name in delta.resources:
            change["resources"] = _map_patch(old_resources.get(name) or {}, delta.resources[name])
        if len(change) > 1:
            containers.append(change)
    if containers:
        spec["containers"] = containers
    sidecars = [
        {"name": str(cont.get("name")), "image": delta.init_images[str(cont.get("name"))]}
        for cont in old_spec.get("initContainers") or []
        if delta.init_images.get(str(cont.get("name")), cont.get("image")) != cont.get("image")
    ]
    if sidecars:
        spec["initContainers"] = sidecars
    if delta.tolerations is not None:
        spec["tolerations"] = list(delta.tolerations)
    patch: dict[str, Any] = {}
    if meta:
        patch["metadata"] = meta
    if spec:
        patch["spec"] = spec
    return patch


def _map_patch(old: Obj, new: Obj) -> dict[str, Any]:
    """The merge patch from map `old` to map `new` (nested maps patched key by key)."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = _map_patch(before, value)
        elif value != before:
            patch[key] = value
    return patch


def _image_name(image: str) -> str:
    """The image as the kubelet may report it: `busybox:1` comes back as `docker.io/library/busybox:1`."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if image.startswith(prefix):
            return image[len(prefix) :]
    return image


def pod_settled(pod: Obj) -> bool:
    """Every container runs the image its spec asks for and the pod is Ready: an updated pod's
    containers restarted (the kubelet reports the new image only for the new container)."""
    if not pod_ready(pod):
        return False
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if any(
        cond.get("type") in RESIZE_CONDITIONS and cond.get("status") == "True"
        for cond in status.get("conditions") or []
    ):
        return False  # the kubelet has not applied a resize yet
    reported = {
        str(s.get("name")): s
        for s in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    }
    wanted = [*(spec.get("containers") or [])] + [
        cont for cont in spec.get("initContainers") or [] if cont.get("restartPolicy") == "Always"
    ]
    for cont in wanted:
        state = reported.get(str(cont.get("name")))
        if state is None or _image_name(str(state.get("image") or "")) != _image_name(
            str(cont.get("image") or "")
        ):
            return False
    return True


def node_resizes(pod: Obj) -> bool:
    """The pod's kubelet resizes in place: its running containers report their resources (the API
    server refuses a resize of a pod whose kubelet does not, as it does here)."""
    for state in (pod.get("status") or {}).get("containerStatuses") or []:
        if (state.get("state") or {}).get("running") is not None:
            return state.get("resources") is not None
    return True  # nothing runs yet: the API server takes the resize


def for_group(classification: Classification, pods: Sequence[Obj]) -> Classification:
    """The classification for one group: a resize needs every pod on a node that resizes."""
    if all(node_resizes(pod) for pod in pods):
        return classification
    return Classification(
        tuple(
            Change(UpdatePath.RECREATE, change.where, "a node of this group does not resize pods in place")
            if change.path is UpdatePath.RESIZE
            else change
            for change in classification.changes
        )
    )


class GroupProgress(enum.Enum):
    DONE = "done"  # the leader carries the new revision
    STARTED = "started"  # workers reached, leader not yet
    PENDING = "pending"  # nothing written yet, in place is possible
    RECREATE = "recreate"  # left to the normal rollout


@dataclass(frozen=True)
class GroupInPlace:
    """One group as the in-place update sees it."""

    index: int
    progress: GroupProgress
    available: bool  # ready, and (when updated) settled on the new images
    classification: Classification | None  # None: the group's revision is unknown


def group_progress(
    leader: Obj,
    workers: Sequence[Obj],
    worker_sts: Obj | None,
    key: str,
    classification: Classification | None,
) -> GroupProgress:
    if revision_key_of(leader) == key:
        return GroupProgress.DONE
    if (worker_sts is not None and revision_key_of(worker_sts) == key) or any(
        revision_key_of(pod) == key for pod in workers
    ):
        return GroupProgress.STARTED
    if classification is not None and classification.in_place:
        return GroupProgress.PENDING
    return GroupProgress.RECREATE


def statefulset_counts_labelled(sts: Obj, labelled: int) -> bool:
    """The StatefulSet controller counts at least `labelled` pods at its update revision: its pod
    cache holds the revision labels we patched on, so lowering the partition below those pods
    replaces none of them. Released on our own writes alone, the partition could reach it first
    (kube-controller-manager watches pods and StatefulSets on separate streams): it would then
    delete a pod it still sees at the old revision, and the group would be recreated."""
    return int((sts.get("status") or {}).get("updatedReplicas") or 0) >= labelled


def labelled_at_update_revision(sts: Obj, pods: Iterable[Obj]) -> int:
    """How many of `pods` carry the StatefulSet's update revision as their controller-revision-hash."""
    update = (sts.get("status") or {}).get("updateRevision")
    return sum(1 for pod in pods if update and labels_of(pod).get(CONTROLLER_REVISION_HASH) == update)


@dataclass(frozen=True)
class InPlacePlan:
    hold: bool  # the leader StatefulSet's partition stays at its replicas
    advance: tuple[int, ...]  # groups to move on this round: started ones, then new starts
    # The partition is not lowered this round (the StatefulSet controller has not counted every
    # leader updated in place yet); unlike `hold` it is not raised either.
    keep: bool = False


def plan_groups(
    groups: Sequence[GroupInPlace], *, max_unavailable: int, halted: bool, leaders_counted: bool
) -> InPlacePlan:
    """Which groups move this round. Started groups always finish (a group is never left half
    updated); new ones start, highest ordinal first like a rollout, while fewer than
    max(maxUnavailable, 1) groups are unavailable, and never while the rollout is halted.
    The partition is held at the replicas while a group waits, and kept where it is until the
    leader StatefulSet's controller counts the leaders updated in place (`leaders_counted`,
    `statefulset_counts_labelled`)."""
    waiting = [g for g in groups if g.progress in (GroupProgress.STARTED, GroupProgress.PENDING)]
    started = [g.index for g in groups if g.progress is GroupProgress.STARTED]
    unavailable = sum(1 for g in groups if not g.available or g.progress is GroupProgress.STARTED)
    room = 0 if halted else max(max_unavailable, 1) - unavailable
    starts: list[int] = []
    for group in sorted(groups, key=lambda g: -g.index):
        if len(starts) >= room:
            break
        if group.progress is GroupProgress.PENDING and group.available:
            starts.append(group.index)
    advance = (*sorted(started, reverse=True), *starts)
    return InPlacePlan(hold=bool(waiting), advance=advance, keep=not leaders_counted)


def halted(lws: Obj) -> bool:
    """Rollout control halted the rollout at its progress deadline: no group starts in place."""
    conditions = (lws.get("status") or {}).get("conditions") or []
    return any(
        cond.get("type") == ext.CONDITION_ROLLOUT_PROGRESS_DEADLINE_EXCEEDED and cond.get("status") == "True"
        for cond in conditions
    )


def classify_specs(live: Obj, proposed: Obj, *, resizes_in_place: bool = False) -> Classification:
    """The change from one LWS spec to another, as the controller classifies their revisions (the
    fields that are no part of a revision, like `maxGroupRestarts`, left out)."""

    def revision_view(spec: Obj) -> dict[str, Any]:
        lwt = without_live_settings(spec.get("leaderWorkerTemplate") or {})
        return {"leaderWorkerTemplate": lwt, "networkConfig": spec.get("networkConfig")}

    return classify(revision_view(live), revision_view(proposed), resizes_in_place=resizes_in_place)


def batches(replicas: int, max_unavailable: int) -> list[tuple[int, ...]]:
    """The groups updated in place together, highest ordinal first, when every group gets Ready
    again before the next batch (what `plan_groups` does round after round)."""
    size = max(max_unavailable, 1)
    order = list(range(replicas - 1, -1, -1))
    return [tuple(order[i : i + size]) for i in range(0, len(order), size)]


def path_words(classification: Classification) -> str:
    """`image, metadata` — the in-place kinds of change, for events and `lws plan`."""
    kinds = {
        UpdatePath.METADATA: "metadata",
        UpdatePath.POD_UPDATE: "pod update",
        UpdatePath.RESIZE: "resize",
    }
    present = sorted({change.path for change in classification.changes if change.path in kinds})
    return ", ".join(kinds[path] for path in present)


def needs_new_pods_message(classification: Classification) -> str:
    reasons = "; ".join(classification.reasons(UpdatePath.RECREATE))
    return f"the change needs new pods, so its groups are recreated as in a rollout: {reasons}"


def in_place_reasons(classification: Classification) -> str:
    """Every in-place change with its reason, for the event and `lws plan`."""
    paths = (UpdatePath.POD_UPDATE, UpdatePath.RESIZE, UpdatePath.METADATA)
    return "; ".join(reason for path in paths for reason in classification.reasons(path))


def updated_in_place_message(index: int, classification: Classification) -> str:
    return (
        f"group {index} updated in place ({path_words(classification)}): {in_place_reasons(classification)}"
    )
