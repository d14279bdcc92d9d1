"""The short override table: CRD facts the msgspec models do not carry.

The models (``leaderworkerset.api``) declare types, enums, defaults, bounds and list-map markers.
What is left is listed here, keyed by ``(StructName, json field)`` — or ``(StructName, "")`` for the
object itself:

* required fields: Go fields without ``omitempty`` (controller-gen makes them required), and the
  keys of list-maps (the API server insists that map keys are required or defaulted);
* CEL rules (``x-kubernetes-validations``);
* embedded ObjectMeta that must be reduced to template metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from leaderworkerset.api import constants as c
from leaderworkerset.crd.builder import EMBEDDED_META_MARKER, REQUIRED_MARKER

# Among roles not scaled externally, replicas are either all unset/zero or all positive: a DS that
# mixes them could never become Available (upstream's CEL rule on DisaggregatedSetSpec).
# Upstream main after v1.0 also exempts partitioned roles (those with `subRoles`) and words the
# message for them. This schema has no `subRoles` field (sub-roles are not supported yet), so the
# rule cannot name it — the API server refuses a CRD whose rule reads an undeclared field — and
# without that field every role is unpartitioned: the rule below decides exactly as upstream's.
# The message is upstream main's, word for word.
_NON_EXTERNAL_ROLES: Final = (
    f"self.roles.filter(r, !has(r.scaling) || r.scaling.mode != '{c.ROLE_SCALING_EXTERNAL}')"
)
DS_REPLICAS_RULE: Final = (
    f"{_NON_EXTERNAL_ROLES}.all(r, !has(r.spec.replicas) || r.spec.replicas == 0) || "
    f"{_NON_EXTERNAL_ROLES}.all(r, has(r.spec.replicas) && r.spec.replicas > 0)"
)
DS_REPLICAS_MESSAGE: Final = (
    "replicas must be zero for all non-External unpartitioned roles or non-zero for all non-External "
    "unpartitioned roles"
)
# Upstream v1.0's wording of the same rule (what its CRD answers), kept for the comparison tests.
DS_REPLICAS_MESSAGE_V1: Final = (
    "replicas must be zero for all non-External roles or non-zero for all non-External roles"
)

_REQUIRED: Final = {REQUIRED_MARKER: True}

MARKERS: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    # LeaderWorkerSet
    ("LeaderWorkerSetSpec", "leaderWorkerTemplate"): _REQUIRED,
    ("LeaderWorkerTemplate", "workerTemplate"): _REQUIRED,
    ("RolloutStrategy", "type"): _REQUIRED,
    ("NetworkConfig", "subdomainPolicy"): _REQUIRED,
    # spec.scheduling: list-map keys and the required key of a topology constraint, as in the
    # scheduling.k8s.io/v1alpha3 building blocks these types mirror
    ("ResourceClaim", "name"): _REQUIRED,
    ("TopologyConstraint", "key"): _REQUIRED,
    # DisaggregatedSet
    ("DisaggregatedSet", "spec"): _REQUIRED,
    ("DisaggregatedSetSpec", ""): {
        "x-kubernetes-validations": [{"message": DS_REPLICAS_MESSAGE, "rule": DS_REPLICAS_RULE}]
    },
    ("DisaggregatedSetSpec", "roles"): _REQUIRED,
    ("DisaggregatedRoleSpec", "name"): _REQUIRED,
    ("DisaggregatedRoleSpec", "metadata"): {EMBEDDED_META_MARKER: True},
    ("RoleStatus", "name"): _REQUIRED,
    # DisaggregatedSetRoleScaler
    ("DisaggregatedSetRoleScalerSpec", "replicas"): _REQUIRED,
}
