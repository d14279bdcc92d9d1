"""In-place updates, the writes: what changes on a pod (or a worker StatefulSet's template) of one
role between two revisions (`template_delta`), the patches that bring a running pod, its `resize`
subresource and a worker template there, and when an updated pod has settled on its new images."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import extensions as ext
from leaderworkerset.core.groups.state import pod_ready
from leaderworkerset.core.lifecycle.restart import IN_PLACE_RESTARTS_PENDING, restart_total
from leaderworkerset.core.objects import Obj, annotations_of, labels_of

# The pod conditions of a resize the kubelet has not finished (InPlacePodVerticalScaling).
RESIZE_CONDITIONS = frozenset({"PodResizePending", "PodResizeInProgress"})


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
    annotations: dict[str, str | None] = {ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS: str(restart_total(pod))}
    if ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS in annotations_of(pod):
        annotations[ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS] = None
    return {"metadata": {"annotations": annotations}}


def restarts_containers(delta: TemplateDelta, pod: Obj) -> bool:
    """The delta changes the image of one of the pod's containers (the kubelet restarts it)."""
    spec = pod.get("spec") or {}
    return bool(
        _changed_images(spec.get("containers") or [], delta.images)
        or _changed_images(spec.get("initContainers") or [], delta.init_images)
    )


def template_delta(old: Obj, new: Obj) -> TemplateDelta:
    """From pod template `old` to `new` (a change `classify_template_change` found in place)."""
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


def _toleration(toleration: Obj) -> dict[str, Any]:
    """A toleration as the API server stores it: empty fields are dropped (an empty `effect` or
    `value` is the same toleration as none)."""
    return {key: value for key, value in toleration.items() if value not in (None, "")}


def _tolerations_patch(current: Sequence[Obj], wanted: Sequence[Obj] | None) -> list[Obj] | None:
    """The pod's tolerations with those of `wanted` it lacks (None: it has them all, in any order).

    A pod's tolerations may only grow, and the API server appends its own on every create and
    update (DefaultTolerationSeconds: `not-ready` and `unreachable`, NoExecute, 300 s): the pod never
    holds exactly the template's list, so comparing lists would send the same patch every round.
    The strategic-merge patch replaces the whole list, so it keeps every toleration the pod has."""
    if wanted is None:
        return None
    have = [_toleration(toleration) for toleration in current]
    missing = [dict(toleration) for toleration in wanted if _toleration(toleration) not in have]
    return [*(dict(toleration) for toleration in current), *missing] if missing else None


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
    tolerations = _tolerations_patch(spec.get("tolerations") or [], delta.tolerations)
    if tolerations is not None:
        spec_patch["tolerations"] = tolerations
    if containers or init_containers or knock_on:
        # Until the group settles its restarts are the update's (`settle_patch` ends that).
        annotations[ext.ANNOTATION_IN_PLACE_UPDATE_RESTARTS] = IN_PLACE_RESTARTS_PENDING
    if containers or init_containers:
        changed = [str(cont["name"]) for cont in (*containers, *init_containers)]
        annotations[ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS] = json.dumps(
            restarts_before_update(pod, changed), sort_keys=True, separators=(",", ":")
        )
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


def _container_statuses(pod: Obj) -> dict[str, Obj]:
    status = pod.get("status") or {}
    statuses = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    return {str(s.get("name")): s for s in statuses}


def restarts_before_update(pod: Obj, names: Sequence[str]) -> dict[str, int]:
    """Each named container's restart count as the update changes its image; -1 for one that never
    ran (its first start, restart count 0, is then the new image's)."""
    statuses = _container_statuses(pod)
    counts = {}
    for name in names:
        state = statuses.get(name) or {}
        ran = bool(state.get("lastState") or {}) or any(
            key in (state.get("state") or {}) for key in ("running", "terminated")
        )
        counts[name] = int(state.get("restartCount") or 0) if ran else -1
    return counts


def _restarted_since_update(pod: Obj) -> dict[str, bool] | None:
    """Per container whose image the update changed: whether it runs again since (None: the pod
    records none, e.g. patched by an older version; the reported image names are all there is)."""
    raw = annotations_of(pod).get(ext.ANNOTATION_IN_PLACE_UPDATE_CONTAINERS)
    if raw is None:
        return None
    try:
        before = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(before, dict):
        return None
    statuses = _container_statuses(pod)
    restarted = {}
    for name, count in before.items():
        state = statuses.get(str(name)) or {}
        running = "running" in (state.get("state") or {})
        restarted[str(name)] = running and int(state.get("restartCount") or 0) > int(count)
    return restarted


def pod_settled(pod: Obj) -> bool:
    """Every container runs the image its spec asks for and the pod is Ready: an updated pod's
    containers restarted: each reports its spec's image (the kubelet reports the new image only for
    the new container), or, for one whose image the update changed, started again since
    (`in-place-update-containers`): the kubelet reports the image by a name of the runtime's choosing,
    which for a new name of content the node holds is the old name."""
    if not pod_ready(pod):
        return False
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if any(
        cond.get("type") in RESIZE_CONDITIONS and cond.get("status") == "True"
        for cond in status.get("conditions") or []
    ):
        return False  # the kubelet has not applied a resize yet
    reported = _container_statuses(pod)
    restarted = _restarted_since_update(pod) or {}
    wanted = [*(spec.get("containers") or [])] + [
        cont for cont in spec.get("initContainers") or [] if cont.get("restartPolicy") == "Always"
    ]
    for cont in wanted:
        state = reported.get(str(cont.get("name")))
        if restarted.get(str(cont.get("name"))):
            continue
        if state is None or _image_name(str(state.get("image") or "")) != _image_name(
            str(cont.get("image") or "")
        ):
            return False
    return True
