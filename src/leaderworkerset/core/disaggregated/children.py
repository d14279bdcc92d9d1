"""Child LeaderWorkerSets of a DisaggregatedSet: build, list, resolve targets.

A child is a deep copy of its role's LWS spec with the controller's replicas, the five DS labels
merged over the user's labels (LWS metadata and pod templates), the placement affinity and
the DISAGGREGATEDSET_* env vars in every container, the role's metadata annotations plus
`initial-replicas`, and a controller ownerReference to the DS (no blockOwnerDeletion, as upstream).
"""

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.disaggregated.naming import (
    child_labels,
    child_lws_name,
    revision_of,
    slice_of,
)
from leaderworkerset.core.disaggregated.placement import with_placement
from leaderworkerset.core.objects import (
    Obj,
    annotations_of,
    controller_reference,
    is_controlled_by,
    is_deleting,
    labels_of,
    lws_replicas,
    metadata,
)

_INT32_MAX = 2**31 - 1
# strconv.ParseInt(value, 10, 32) accepts an optional sign; negative values count as unset (v1.0).
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_DS_ENV_NAMES = (
    c.ENV_DISAGGREGATEDSET_NAME,
    c.ENV_DISAGGREGATEDSET_ROLE,
    c.ENV_DISAGGREGATEDSET_SLICE,
    c.ENV_DISAGGREGATEDSET_REVISION,
)


# --- reading children -------------------------------------------------------------------------------


def status_count(lws: Obj, field: str) -> int:
    return int((lws.get("status") or {}).get(field) or 0)


def initial_replicas(lws: Obj) -> int | None:
    """The `initial-replicas` annotation; None when missing, not an int32 or negative."""
    value = annotations_of(lws).get(c.ANNOTATION_DS_INITIAL_REPLICAS, "")
    if not _DECIMAL.fullmatch(value):
        return None
    parsed = int(value)
    if parsed < 0 or parsed > _INT32_MAX:
        return None
    return parsed


def owned_children(ds: Obj, candidates: Iterable[Obj]) -> list[Obj]:
    """Listing: LWS labelled with the DS name and a slice, and controlled by this DS (by UID).

    Label-less (pre-slice) LWS are ignored, as v1.0 does.
    """
    name = metadata(ds).get("name")
    return [
        lws
        for lws in candidates
        if labels_of(lws).get(c.LABEL_DS_NAME) == name
        and labels_of(lws).get(c.LABEL_DS_SLICE)
        and is_controlled_by(lws, ds)
    ]


def slice_children(children: Iterable[Obj], slice_index: int) -> list[Obj]:
    return [lws for lws in children if slice_of(lws) == slice_index]


def old_children(children: Iterable[Obj], revision: str) -> list[Obj]:
    """Children of other revisions that still count: terminating ones are ignored (v1.0)."""
    return [lws for lws in children if revision_of(lws) != revision and not is_deleting(lws)]


def target_children(children: Iterable[Obj], revision: str) -> list[Obj]:
    return [lws for lws in children if revision_of(lws) == revision]


# --- replica targets ----------------------------------------------------------------------------------


def is_external(role: Obj) -> bool:
    return str((role.get("scaling") or {}).get("mode") or "") == c.ROLE_SCALING_EXTERNAL


def resolve_targets(ds: Obj, scalers: Mapping[str, Obj]) -> dict[str, int]:
    """Targets: desired replicas per role and slice. Static: `spec.replicas` (nil → 1); External: the
    bound scaler's `spec.replicas`. An External role without a scaler is left out (unresolved)."""
    targets: dict[str, int] = {}
    for role in (ds.get("spec") or {}).get("roles") or []:
        name = str(role.get("name") or "")
        if is_external(role):
            scaler = scalers.get(name)
            if scaler is None:
                continue
            count = int((scaler.get("spec") or {}).get("replicas") or 0)
        else:
            count = lws_replicas(role)
        if count >= 0:
            targets[name] = count
    return targets


def unresolved_roles(roles: Sequence[str], targets: Mapping[str, int]) -> list[str]:
    return [role for role in roles if role not in targets]


# --- building a child ---------------------------------------------------------------------------------


def _ds_env(ds_name: str, role: str, slice_index: int, revision: str) -> list[dict[str, str]]:
    values = (ds_name, role, str(slice_index), revision)
    return [{"name": name, "value": value} for name, value in zip(_DS_ENV_NAMES, values, strict=True)]


def _with_env(containers: Iterable[Obj], env: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Each container with the DS variables appended; user entries of the same names give way."""
    result = []
    for container in containers:
        kept = [e for e in container.get("env") or [] if e.get("name") not in _DS_ENV_NAMES]
        result.append({**container, "env": [*kept, *env]})
    return result


def _child_template(
    template: Obj, labels: Mapping[str, str], env: list[dict[str, str]], ds: Obj, slice_index: int
) -> dict[str, Any]:
    result: dict[str, Any] = copy.deepcopy(dict(template))
    meta = dict(result.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    result["metadata"] = meta
    pod_spec = with_placement(
        result.get("spec") or {},
        str(metadata(ds).get("name")),
        slice_index,
        (ds.get("spec") or {}).get("placementPolicy"),
    )
    for key in ("containers", "initContainers"):
        if pod_spec.get(key):
            pod_spec[key] = _with_env(pod_spec[key], env)
    result["spec"] = pod_spec
    return result


def owner_reference(ds: Obj) -> dict[str, Any]:
    """Children are controlled by the DS without blockOwnerDeletion, as upstream creates them."""
    return controller_reference(ds, c.DS_API_VERSION, c.DS_KIND, block_owner_deletion=False)


def build_child(
    ds: Obj, role: Obj, slice_index: int, revision: str, *, replicas: int, initial: int
) -> dict[str, Any]:
    """The child LWS of (role, slice, revision) starting at `replicas`, intended size `initial`."""
    ds_name = str(metadata(ds).get("name"))
    role_name = str(role.get("name"))
    labels = child_labels(ds_name, slice_index, revision, role_name)
    env = _ds_env(ds_name, role_name, slice_index, revision)
    spec: dict[str, Any] = copy.deepcopy(dict(role.get("spec") or {}))
    spec["replicas"] = replicas
    lwt = dict(spec.get("leaderWorkerTemplate") or {})
    lwt["workerTemplate"] = _child_template(lwt.get("workerTemplate") or {}, labels, env, ds, slice_index)
    if lwt.get("leaderTemplate") is not None:
        lwt["leaderTemplate"] = _child_template(lwt["leaderTemplate"], labels, env, ds, slice_index)
    spec["leaderWorkerTemplate"] = lwt
    role_meta = role.get("metadata") or {}
    annotations = {**(role_meta.get("annotations") or {}), c.ANNOTATION_DS_INITIAL_REPLICAS: str(initial)}
    return {
        "apiVersion": c.LWS_API_VERSION,
        "kind": c.LWS_KIND,
        "metadata": {
            "name": child_lws_name(ds_name, slice_index, revision, role_name),
            "namespace": metadata(ds).get("namespace"),
            "labels": {**(role_meta.get("labels") or {}), **labels},
            "annotations": annotations,
            "ownerReferences": [owner_reference(ds)],
        },
        "spec": spec,
    }


def group_replacement_policy(spec: Obj) -> str:
    """The live-synced policy, normalised ("" means the API default, PostTermination)."""
    return str(spec.get("groupReplacementPolicy") or c.GROUP_REPLACEMENT_POST_TERMINATION)
