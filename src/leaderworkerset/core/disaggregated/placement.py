"""Placement policy: the pod affinity injected into child LWS pod templates.

ExclusiveSlice keeps the roles of one slice in one topology domain and repels the other slices of
the same DisaggregatedSet; ExclusiveTopology also repels every other DisaggregatedSet's slices.
Pods without the DS labels (other workloads) are never matched.
"""

import copy
from collections.abc import Mapping
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import MutableObj


def _requirement(key: str, operator: str, *values: str) -> MutableObj:
    requirement: MutableObj = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def placement_terms(
    ds_name: str, slice_index: int, policy: Mapping[str, Any] | None
) -> tuple[MutableObj, list[MutableObj]]:
    """(podAffinity term, podAntiAffinity terms) for the policy, or ({}, []) when there is none.

    A non-None policy without a topology key yields nothing: the webhook rejects that combination,
    and an empty topologyKey would make the API server reject the whole LWS.
    """
    policy_type = str((policy or {}).get("type") or "")
    topology = str((policy or {}).get("topology") or "")
    if policy_type in ("", c.PLACEMENT_NONE) or not topology:
        return {}, []
    slice_value = str(slice_index)
    together = {
        "labelSelector": {
            "matchExpressions": [
                _requirement(c.LABEL_DS_NAME, "In", ds_name),
                _requirement(c.LABEL_DS_SLICE, "In", slice_value),
            ]
        },
        "topologyKey": topology,
    }
    spread = [_requirement(c.LABEL_DS_NAME, "In", ds_name)]
    if slice_index == 0:
        # NotIn alone matches label-less pods; slice 0 must not repel pre-slice pods of itself.
        spread.append(_requirement(c.LABEL_DS_SLICE, "Exists"))
    spread.append(_requirement(c.LABEL_DS_SLICE, "NotIn", slice_value))
    apart = [{"labelSelector": {"matchExpressions": spread}, "topologyKey": topology}]
    if policy_type == c.PLACEMENT_EXCLUSIVE_TOPOLOGY:
        others = [
            _requirement(c.LABEL_DS_NAME, "Exists"),
            _requirement(c.LABEL_DS_NAME, "NotIn", ds_name),
            _requirement(c.LABEL_DS_SLICE, "Exists"),
        ]
        apart.append({"labelSelector": {"matchExpressions": others}, "topologyKey": topology})
    return together, apart


def with_placement(
    pod_spec: Mapping[str, Any], ds_name: str, slice_index: int, policy: Mapping[str, Any] | None
) -> MutableObj:
    """A copy of `pod_spec` with the policy's terms appended after the user's own terms."""
    spec: MutableObj = copy.deepcopy(dict(pod_spec))
    together, apart = placement_terms(ds_name, slice_index, policy)
    if not together:
        return spec
    affinity = spec.setdefault("affinity", {}) or {}
    spec["affinity"] = affinity
    pod_affinity = affinity.setdefault("podAffinity", {}) or {}
    affinity["podAffinity"] = pod_affinity
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    pod_affinity[required] = [*(pod_affinity.get(required) or []), together]
    anti = affinity.setdefault("podAntiAffinity", {}) or {}
    affinity["podAntiAffinity"] = anti
    anti[required] = [*(anti.get(required) or []), *apart]
    return spec
