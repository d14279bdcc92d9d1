"""Plain accessors of Kubernetes objects as dicts, the one ``Obj`` alias and ``ControllerEvent``.

The floor every package of `core` (and every layer above it) can import, so the tests that would
otherwise be spelled again in each feature live here once: whether a set uses Hash group identity
(`is_hash`), and the ownerReferences our objects carry and are recognised by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um

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


RESTART_BACKOFF_DEFAULTS: Mapping[str, int] = {
    "baseSeconds": um.DEFAULT_RESTART_BACKOFF_BASE_SECONDS,
    "capSeconds": um.DEFAULT_RESTART_BACKOFF_CAP_SECONDS,
}


def spec_restart_backoff(spec: Obj) -> dict[str, int] | None:
    """A LeaderWorkerSet spec's (or a DisaggregatedSet role spec's) `leaderWorkerTemplate.restartBackoff`
    with each missing member at its default, as the defaulting webhook writes it; None when absent.
    Members are taken as given (the rules are core/lifecycle/backoffsource.py's)."""
    template = spec.get("leaderWorkerTemplate")
    field = template.get("restartBackoff") if isinstance(template, Mapping) else None
    if not isinstance(field, Mapping):
        return None
    return {
        key: value if isinstance(value := field.get(key), int) and not isinstance(value, bool) else default
        for key, default in RESTART_BACKOFF_DEFAULTS.items()
    }


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


# The rule of an opt-in feature that steers the rollout of an Ordinal set's leader StatefulSet.
ORDINAL_ONLY_RULE = "only supported with groupIdentity Ordinal (a Hash set rolls through its Deployment)"


def is_hash(lws: Obj) -> bool:
    """The set keys its groups by Hash identity (a leader Deployment), not by ordinal."""
    return spec_is_hash(lws.get("spec") or {})


def spec_is_hash(spec: Obj) -> bool:
    """`is_hash` of a LeaderWorkerSet spec (or a DisaggregatedSet role's)."""
    return spec.get("groupIdentity") == c.GROUP_IDENTITY_HASH


# --- ownerReferences ---------------------------------------------------------------------------------

_CORE_V1 = "v1"
_POD_KIND = "Pod"


def controller_reference(
    owner: Obj, api_version: str, kind: str, *, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """A controller ownerReference to `owner`; it blocks the owner's foreground deletion until the
    dependent is gone, except where upstream leaves that out (a DisaggregatedSet's children)."""
    ref: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
    }
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


def lws_owner_reference(lws: Obj) -> dict[str, Any]:
    return controller_reference(lws, c.LWS_API_VERSION, c.LWS_KIND)


def pod_owner_reference(pod: Obj) -> dict[str, Any]:
    return controller_reference(pod, _CORE_V1, _POD_KIND)


def controller_owner(obj: Obj) -> Obj | None:
    """The ownerReference marked controller=true, as metav1.GetControllerOf finds it."""
    refs = metadata(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            owner: Obj = ref
            return owner
    return None


def is_controlled_by(obj: Obj, owner: Obj, kind: str | None = None) -> bool:
    """`obj`'s controller is this incarnation of `owner` (by UID; of `kind`, when given)."""
    ref = controller_owner(obj)
    return (
        ref is not None
        and str(ref.get("uid") or "") == uid_of(owner)
        and (kind is None or ref.get("kind") == kind)
    )


def same_controller(current: Mapping[str, Any] | None, desired: Mapping[str, Any] | None) -> bool:
    """Upstream's controllerReferencesEqual: apiVersion, kind, name and UID agree."""
    if current is None or desired is None:
        return False
    return all(current.get(k) == desired.get(k) for k in ("apiVersion", "kind", "name", "uid"))


def owner_uids(obj: Obj) -> set[str]:
    """The UIDs of every owner of `obj`, the controller's and garbage-collection owners'."""
    return {str(ref.get("uid") or "") for ref in metadata(obj).get("ownerReferences") or ()}


def statefulset_replicas(sts: Obj) -> int:
    """spec.replicas; the API server always defaults it, absent only in hand-written objects (→ 1)."""
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def statefulset_partition(sts: Obj) -> int:
    rolling = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return int(rolling.get("partition") or 0)
