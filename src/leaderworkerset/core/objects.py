"""Plain accessors of Kubernetes objects as dicts, the one ``Obj`` alias and ``ControllerEvent``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c

# An object as read from a cache or the API server: never changed in place.
Obj = Mapping[str, Any]
# An object being built or changed in place (a pod under admission, a desired child object).
MutableObj = dict[str, Any]


@dataclass(frozen=True)
class ControllerEvent:
    """An event the controller shell should record on the LeaderWorkerSet.

    `related` names the secondary object upstream attaches (a ControllerRevision, a leader pod) as
    (kind, name); the shell resolves it when it records the event.
    """

    type: str
    reason: str
    action: str
    message: str
    related: tuple[str, str] | None = None


def _count_or_default(value: object) -> int:
    # A nil *int32 reads as the CRD default 1; so does a mistyped one, which admission reports.
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def spec_replicas(spec: Obj) -> int:
    """A LeaderWorkerSet spec's (or a DisaggregatedSet role spec's) replicas."""
    return _count_or_default(spec.get("replicas"))


def spec_size(spec: Obj) -> int:
    """A LeaderWorkerSet spec's leaderWorkerTemplate.size."""
    template = spec.get("leaderWorkerTemplate")
    return _count_or_default(template.get("size") if isinstance(template, Mapping) else None)


def lws_replicas(lws: Obj) -> int:
    return spec_replicas(lws.get("spec") or {})


def lws_size(lws: Obj) -> int:
    return spec_size(lws.get("spec") or {})


def metadata(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def name_of(obj: Obj) -> str:
    return str(metadata(obj).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(metadata(obj).get("namespace") or "")


def uid_of(obj: Obj) -> str:
    return str(metadata(obj).get("uid") or "")


def labels_of(obj: Obj) -> dict[str, str]:
    return dict(metadata(obj).get("labels") or {})


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict(metadata(obj).get("annotations") or {})


def revision_key_of(obj: Obj) -> str:
    """The `template-revision-hash` label ("" when absent), on any of our objects."""
    return labels_of(obj).get(c.LABEL_TEMPLATE_REVISION_HASH, "")


def is_deleting(obj: Obj) -> bool:
    return metadata(obj).get("deletionTimestamp") is not None


def controller_owner(obj: Obj) -> Obj | None:
    """The ownerReference marked controller=true, as metav1.GetControllerOf finds it."""
    for ref in metadata(obj).get("ownerReferences") or []:
        if ref.get("controller") is True:
            owner: Obj = ref
            return owner
    return None


def statefulset_replicas(sts: Obj) -> int:
    """spec.replicas; the API server always defaults it, absent only in hand-written objects (→ 1)."""
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def statefulset_partition(sts: Obj) -> int:
    rolling = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return int(rolling.get("partition") or 0)
