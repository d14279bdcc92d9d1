"""Which template changes can reach running pods without recreating them (diff-aware updates).

A pod keeps its node, its IP and its loaded weights only when every change between the old and the
new revision is one the API server accepts on a live pod:

* **metadata**: the template's labels and annotations (always mutable on a pod);
* **pod update**: a container image (regular containers and sidecars, i.e. init containers with
  ``restartPolicy: Always``; the kubelet restarts just that container) and added tolerations;
* **resize**: CPU and memory requests and limits, through the pod's ``resize`` subresource, on a
  cluster that resizes in place (``InPlacePodVerticalScaling``, GA in 1.35);
* anything else (env, command, volumes, ports, accelerators, group size, network config, a plain init
  container's image, which has already run) needs new pods: the normal group rollout.

`classify_template_change` is pure: two revision specs (``{"leaderWorkerTemplate": …, "networkConfig":
…}``, as `revision.revision_spec` returns them) in, the path that covers every change and a reason
per change out, worded for `lws plan` and the event that names the path taken.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderworkerset.core.objects import Obj
from leaderworkerset.core.rollout.revision import without_live_settings

# Resources the kubelet resizes in place; every other resource (accelerators, hugepages,
# ephemeral storage) is fixed for the pod's life.
RESIZABLE_RESOURCES = frozenset({"cpu", "memory"})
_TEMPLATES = ("leaderTemplate", "workerTemplate")
_CONTAINER_LISTS = ("initContainers", "containers")


class UpdatePath(enum.IntEnum):
    """Ordered: a revision takes the highest path any of its changes needs."""

    NONE = 0
    METADATA = 1
    POD_UPDATE = 2
    RESIZE = 3
    RECREATE = 4


@dataclass(frozen=True)
class Change:
    path: UpdatePath
    where: str  # e.g. "workerTemplate.spec.containers[main].image"
    why: str


@dataclass(frozen=True)
class Classification:
    changes: tuple[Change, ...]

    @property
    def path(self) -> UpdatePath:
        return max((change.path for change in self.changes), default=UpdatePath.NONE)

    @property
    def in_place(self) -> bool:
        return UpdatePath.NONE < self.path < UpdatePath.RECREATE

    def reasons(self, path: UpdatePath) -> list[str]:
        """`where: why` of the changes that need exactly `path`."""
        return [f"{change.where}: {change.why}" for change in self.changes if change.path is path]


def classify_template_change(old: Obj, new: Obj, *, resizes_in_place: bool) -> Classification:
    """The path from revision spec `old` to `new`, with one `Change` per changed field."""
    changes: list[Change] = []
    old_lwt, new_lwt = old.get("leaderWorkerTemplate") or {}, new.get("leaderWorkerTemplate") or {}
    for key in sorted(set(old_lwt) | set(new_lwt)):
        if key not in _TEMPLATES and old_lwt.get(key) != new_lwt.get(key):
            changes.append(Change(UpdatePath.RECREATE, f"leaderWorkerTemplate.{key}", "defines the groups"))
    if old.get("networkConfig") != new.get("networkConfig"):
        changes.append(Change(UpdatePath.RECREATE, "networkConfig", "defines the groups' names"))
    # Without a leader template the leader is made from the worker template, so the worker
    # template's changes are the leader's too: the shell applies them to every pod of the group.
    for name in _TEMPLATES:
        if (name in old_lwt) != (name in new_lwt):
            changes.append(Change(UpdatePath.RECREATE, f"leaderWorkerTemplate.{name}", "added or removed"))
        elif name in new_lwt:
            changes += _template_changes(name, old_lwt[name] or {}, new_lwt[name] or {}, resizes_in_place)
    return Classification(tuple(changes))


def _template_changes(name: str, old: Obj, new: Obj, resizes_in_place: bool) -> list[Change]:
    changes: list[Change] = []
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    for key in sorted(set(old_meta) | set(new_meta)):
        if old_meta.get(key) == new_meta.get(key):
            continue
        if key in ("labels", "annotations"):
            changes.append(
                Change(UpdatePath.METADATA, f"{name}.metadata.{key}", "patched on the running pods")
            )
        else:
            changes.append(Change(UpdatePath.RECREATE, f"{name}.metadata.{key}", "not mutable on a pod"))
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    for key in sorted(set(old_spec) | set(new_spec)):
        if old_spec.get(key) == new_spec.get(key):
            continue
        where = f"{name}.spec.{key}"
        if key in _CONTAINER_LISTS:
            changes += _container_list_changes(
                where, old_spec.get(key) or [], new_spec.get(key) or [], resizes_in_place
            )
        elif key == "tolerations":
            changes.append(_toleration_change(where, old_spec.get(key) or [], new_spec.get(key) or []))
        else:
            changes.append(Change(UpdatePath.RECREATE, where, "the API refuses it on a running pod"))
    return changes


def _toleration_change(where: str, old: Sequence[Obj], new: Sequence[Obj]) -> Change:
    if all(toleration in new for toleration in old):
        return Change(UpdatePath.POD_UPDATE, where, "tolerations added on the running pods")
    return Change(
        UpdatePath.RECREATE, where, "a toleration removed or changed cannot be taken back from a pod"
    )


def _container_list_changes(
    where: str, old: Sequence[Obj], new: Sequence[Obj], resizes_in_place: bool
) -> list[Change]:
    if [c.get("name") for c in old] != [c.get("name") for c in new]:
        return [Change(UpdatePath.RECREATE, where, "containers added, removed, renamed or reordered")]
    changes: list[Change] = []
    for before, after in zip(old, new, strict=True):
        container = f"{where}[{after.get('name')}]"
        sidecar = after.get("restartPolicy") == "Always"
        plain_init = where.endswith("initContainers") and not sidecar
        for key in sorted(set(before) | set(after)):
            if before.get(key) == after.get(key):
                continue
            if key == "image" and not plain_init:
                changes.append(
                    Change(UpdatePath.POD_UPDATE, f"{container}.image", "the kubelet restarts this container")
                )
            elif key == "image":
                changes.append(
                    Change(
                        UpdatePath.RECREATE,
                        f"{container}.image",
                        "an init container has run; a new image would not run",
                    )
                )
            elif key == "resources" and not plain_init:
                changes.append(
                    _resize_change(
                        f"{container}.resources",
                        before.get(key) or {},
                        after.get(key) or {},
                        resizes_in_place,
                    )
                )
            else:
                changes.append(
                    Change(UpdatePath.RECREATE, f"{container}.{key}", "the API refuses it on a running pod")
                )
    return changes


def _resize_change(where: str, old: Obj, new: Obj, resizes_in_place: bool) -> Change:
    changed: set[str] = set()
    for part in sorted(set(old) | set(new)):
        if part not in ("requests", "limits"):
            return Change(UpdatePath.RECREATE, f"{where}.{part}", "not resizable in place")
        before, after = old.get(part) or {}, new.get(part) or {}
        changed |= {r for r in set(before) | set(after) if before.get(r) != after.get(r)}
    fixed = sorted(changed - RESIZABLE_RESOURCES)
    if fixed:
        return Change(UpdatePath.RECREATE, where, f"{', '.join(fixed)} cannot be resized in place")
    if not resizes_in_place:
        return Change(UpdatePath.RECREATE, where, "this cluster does not resize pods in place")
    return Change(UpdatePath.RESIZE, where, f"{', '.join(sorted(changed))} resized in place")


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


def classify_specs(live: Obj, proposed: Obj, *, resizes_in_place: bool = False) -> Classification:
    """The change from one LWS spec to another, as the controller classifies their revisions (the
    fields that are no part of a revision, like `maxGroupRestarts`, left out)."""

    def revision_view(spec: Obj) -> dict[str, Any]:
        lwt = without_live_settings(spec.get("leaderWorkerTemplate") or {})
        return {"leaderWorkerTemplate": lwt, "networkConfig": spec.get("networkConfig")}

    return classify_template_change(
        revision_view(live), revision_view(proposed), resizes_in_place=resizes_in_place
    )


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
