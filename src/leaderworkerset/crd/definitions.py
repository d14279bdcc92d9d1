"""The three CustomResourceDefinitions, assembled from the API models.

Each CRD is described by a :class:`CrdSpec` (names, scope, subresources, printer columns, root
type); :func:`build_crd` turns it into the manifest with the model-derived ``openAPIV3Schema``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from leaderworkerset.api import constants as c
from leaderworkerset.api.disaggregatedset import DisaggregatedSet, DisaggregatedSetRoleScaler
from leaderworkerset.api.leaderworkerset import LeaderWorkerSet
from leaderworkerset.crd.builder import Schema, SchemaBuilder
from leaderworkerset.crd.descriptions import DESCRIPTIONS
from leaderworkerset.crd.embedded import EmbeddedSchemas, load_definitions
from leaderworkerset.crd.markers import MARKERS

CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
CRD_KIND: Final = "CustomResourceDefinition"
_AGE_COLUMN: Final = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
# The standard TypeMeta descriptions, taken from a core type of the same Kubernetes release.
_TYPE_META_SOURCE: Final = "io.k8s.api.core.v1.Pod"


def _condition_status(condition_type: str) -> str:
    return f'.status.conditions[?(@.type=="{condition_type}")].status'


@dataclass(frozen=True)
class CrdSpec:
    group: str
    version: str
    kind: str
    list_kind: str
    plural: str
    singular: str
    root: type[msgspec.Struct]
    description: str
    short_names: Sequence[str] = ()
    printer_columns: Sequence[dict[str, Any]] = ()
    scale: dict[str, str] | None = None
    categories: Sequence[str] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


LEADER_WORKER_SET: Final = CrdSpec(
    group=c.LWS_GROUP,
    version=c.LWS_VERSION,
    kind=c.LWS_KIND,
    list_kind=c.LWS_LIST_KIND,
    plural=c.LWS_PLURAL,
    singular=c.LWS_SINGULAR,
    root=LeaderWorkerSet,
    description="LeaderWorkerSet runs replicated groups of pods, each a leader plus its workers, "
    "that are created, scaled, updated and restarted as a unit.",
    short_names=(c.LWS_SHORT_NAME,),
    printer_columns=(
        {
            "description": "Number of ready replicas",
            "jsonPath": ".status.readyReplicas",
            "name": "Ready",
            "type": "integer",
        },
        {
            "description": "Number of desired replicas",
            "jsonPath": ".spec.replicas",
            "name": "Desired",
            "type": "integer",
        },
        {
            "description": "Number of up-to-date replicas",
            "jsonPath": ".status.updatedReplicas",
            "name": "Up-to-date",
            "type": "integer",
        },
        _AGE_COLUMN,
    ),
    scale={
        "labelSelectorPath": ".status.hpaPodSelector",
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
    },
)

DISAGGREGATED_SET: Final = CrdSpec(
    group=c.DS_GROUP,
    version=c.DS_VERSION,
    kind=c.DS_KIND,
    list_kind=c.DS_LIST_KIND,
    plural=c.DS_PLURAL,
    singular=c.DS_SINGULAR,
    root=DisaggregatedSet,
    description="DisaggregatedSet runs several cooperating roles (for example prefill and decode), "
    "each as LeaderWorkerSets, and rolls them out together.",
    # Upstream shows no columns for DisaggregatedSets; these make `kubectl get` useful.
    printer_columns=(
        {
            "description": "Number of independent copies of the whole role set",
            "jsonPath": ".spec.slices",
            "name": "Slices",
            "type": "integer",
        },
        {
            "description": "Whether every role has its target replicas ready",
            "jsonPath": _condition_status(c.CONDITION_AVAILABLE),
            "name": "Available",
            "type": "string",
        },
        {
            "description": "Whether a rollout or scaling is in progress",
            "jsonPath": _condition_status(c.CONDITION_PROGRESSING),
            "name": "Progressing",
            "type": "string",
        },
        _AGE_COLUMN,
    ),
)

DISAGGREGATED_SET_ROLE_SCALER: Final = CrdSpec(
    group=c.DS_GROUP,
    version=c.DS_VERSION,
    kind=c.DSRS_KIND,
    list_kind=c.DSRS_LIST_KIND,
    plural=c.DSRS_PLURAL,
    singular=c.DSRS_SINGULAR,
    root=DisaggregatedSetRoleScaler,
    description="DisaggregatedSetRoleScaler exposes the scale subresource of one externally scaled "
    "DisaggregatedSet role, for HPA, KEDA or any other scale-aware autoscaler.",
    short_names=(c.DSRS_SHORT_NAME,),
    printer_columns=(
        {"jsonPath": ".spec.replicas", "name": "Desired", "type": "integer"},
        {"jsonPath": ".status.replicas", "name": "Current", "type": "integer"},
        _AGE_COLUMN,
    ),
    scale={
        "labelSelectorPath": ".status.selector",
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
    },
)

ALL_CRDS: Final = (LEADER_WORKER_SET, DISAGGREGATED_SET, DISAGGREGATED_SET_ROLE_SCALER)


def default_builder() -> SchemaBuilder:
    return SchemaBuilder(MARKERS, EmbeddedSchemas(), DESCRIPTIONS)


def root_schema(spec: CrdSpec, builder: SchemaBuilder) -> Schema:
    """The openAPIV3Schema: the model's schema with the object-level conventions of a CRD."""
    schema = builder.struct(spec.root)
    properties = schema["properties"]
    # The API server owns root metadata validation; a CRD schema only says it is an object.
    properties["metadata"] = {"type": "object"}
    type_meta = load_definitions()[_TYPE_META_SOURCE]["properties"]
    for key in ("apiVersion", "kind"):
        properties[key] = {"description": type_meta[key]["description"], "type": "string"}
    schema["description"] = spec.description
    return schema


def build_crd(spec: CrdSpec, builder: SchemaBuilder | None = None) -> dict[str, Any]:
    builder = builder if builder is not None else default_builder()
    names: dict[str, Any] = {
        "kind": spec.kind,
        "listKind": spec.list_kind,
        "plural": spec.plural,
        "singular": spec.singular,
    }
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    if spec.categories:
        names["categories"] = list(spec.categories)
    subresources: dict[str, Any] = {"status": {}}
    if spec.scale is not None:
        subresources["scale"] = dict(spec.scale)
    version: dict[str, Any] = {
        "name": spec.version,
        "schema": {"openAPIV3Schema": root_schema(spec, builder)},
        "served": True,
        "storage": True,
        "subresources": subresources,
    }
    if spec.printer_columns:
        version["additionalPrinterColumns"] = [dict(col) for col in spec.printer_columns]
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {"name": spec.name},
        "spec": {"group": spec.group, "names": names, "scope": "Namespaced", "versions": [version]},
    }


def build_all() -> list[dict[str, Any]]:
    builder = default_builder()
    return [build_crd(spec, builder) for spec in ALL_CRDS]
