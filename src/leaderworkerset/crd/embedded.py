"""Structural schemas of embedded Kubernetes types (PodTemplateSpec, PersistentVolumeClaim, ...).

The source is the Kubernetes 1.37 OpenAPI definitions bundled with ``kubernetes-validate`` (a
maintained, versioned copy of what kube-apiserver publishes). They are JSON-Schema flavoured, so we
convert them into the structural form controller-gen emits for upstream's CRDs:

* ``$ref`` is inlined; a field's own description wins over the referenced type's description;
* ``type: [x, "null"]`` becomes ``type: x`` (optional is not nullable in a CRD);
* IntOrString and Quantity become ``anyOf: [integer, string]`` + ``x-kubernetes-int-or-string``
  (Quantity also carries its pattern), Time becomes a ``date-time`` string;
* keywords a CRD schema does not carry (patch strategies, unions, GVK tags, enum tags of Go
  string types) are dropped;
* ObjectMeta nested in a template is reduced to the fields the API server keeps for embedded
  metadata (``generateEmbeddedObjectMeta``);
* field defaults that the Go types declare with ``+default=`` markers (absent from the bundled
  definitions) come from :data:`FIELD_DEFAULTS`.

Only the generator (dev time) uses this module; ``kubernetes-validate`` is a dev dependency.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

Schema = dict[str, Any]

KUBERNETES_VERSION: Final = "1.37.0"
_DEFINITIONS_DIR: Final = f"v{KUBERNETES_VERSION}-local"
_REF_PREFIX: Final = "#/$defs/"

OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME_TYPES: Final = (
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
)

# The canonical quantity syntax (k8s.io/apimachinery resource.Quantity), as controller-gen emits it.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Defaults declared with `+default=<json>` on k8s.io/api v0.37 fields. controller-gen turns them into
# schema defaults (the apiserver's /openapi/v3 publishes the same values); `+default=ref(...)` markers
# are not emitted by controller-gen and are left out on purpose. Keyed by (definition, property).
FIELD_DEFAULTS: Final[Mapping[tuple[str, str], Any]] = {
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "fsType"): "ext4",
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "readOnly"): False,
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.FileKeySelector", "optional"): False,
    ("io.k8s.api.core.v1.GRPCAction", "service"): "",
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "iscsiInterface"): "default",
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "iscsiInterface"): "default",
    ("io.k8s.api.core.v1.RBDVolumeSource", "keyring"): "/etc/ceph/keyring",
    ("io.k8s.api.core.v1.RBDVolumeSource", "pool"): "rbd",
    ("io.k8s.api.core.v1.RBDVolumeSource", "user"): "admin",
    ("io.k8s.api.core.v1.ScaleIOVolumeSource", "fsType"): "xfs",
    ("io.k8s.api.core.v1.ScaleIOVolumeSource", "storageMode"): "ThinProvisioned",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.EndpointPort", "protocol"): "TCP",
}

_CONDITION: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Condition"

# Validation that metav1.Condition declares with kubebuilder markers (so controller-gen emits it) but
# that the published OpenAPI does not carry.
FIELD_VALIDATIONS: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    (_CONDITION, "type"): {
        "maxLength": 316,
        "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    },
    (_CONDITION, "status"): {"enum": ["True", "False", "Unknown"]},
    (_CONDITION, "observedGeneration"): {"minimum": 0},
    (_CONDITION, "reason"): {
        "maxLength": 1024,
        "minLength": 1,
        "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    },
    (_CONDITION, "message"): {"maxLength": 32768},
}

# LocalObjectReference.name carries `+default=""`; OpenAPI flattens the embedded struct into every
# selector/reference type, so the default appears on each of them.
_LOCAL_OBJECT_REFERENCE_NAME: Final = "io.k8s.api.core.v1.LocalObjectReference"
_EMBEDS_LOCAL_OBJECT_REFERENCE: Final = (
    _LOCAL_OBJECT_REFERENCE_NAME,
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ConfigMapEnvSource",
    "io.k8s.api.core.v1.SecretEnvSource",
    "io.k8s.api.core.v1.ConfigMapVolumeSource",
    "io.k8s.api.core.v1.ConfigMapProjection",
    "io.k8s.api.core.v1.SecretProjection",
)

# Structs that embed LocalObjectReference inherit its `+structType=atomic` under controller-gen, though
# the published OpenAPI leaves them granular; upstream's CRDs mark them atomic, and so do we.
_ATOMIC_BY_EMBEDDING: Final = frozenset(
    {
        "io.k8s.api.core.v1.ConfigMapEnvSource",
        "io.k8s.api.core.v1.SecretEnvSource",
        "io.k8s.api.core.v1.ConfigMapVolumeSource",
        "io.k8s.api.core.v1.ConfigMapProjection",
        "io.k8s.api.core.v1.SecretProjection",
    }
)

# Keywords copied verbatim from a definition; everything else is dropped.
_KEPT_KEYWORDS: Final = frozenset(
    {
        "description",
        "format",
        "required",
        "pattern",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)

# Formats controller-gen emits for Go types (int32/int64 from integer widths, date-time from Time).
_KEPT_FORMATS: Final = frozenset({"int32", "int64", "date-time"})


def _field_default(definition: str, prop: str) -> tuple[bool, Any]:
    if prop == "name" and definition in _EMBEDS_LOCAL_OBJECT_REFERENCE:
        return True, ""
    key = (definition, prop)
    if key in FIELD_DEFAULTS:
        return True, copy.deepcopy(FIELD_DEFAULTS[key])
    return False, None


@cache
def load_definitions() -> Mapping[str, Schema]:
    """The bundled Kubernetes definitions, keyed by OpenAPI name (io.k8s.api.core.v1.Pod, ...)."""
    package = resources.files("kubernetes_validate") / "kubernetes-json-schema" / _DEFINITIONS_DIR
    document = json.loads((package / "_definitions.json").read_text(encoding="utf-8"))
    definitions: Mapping[str, Schema] = document["$defs"]
    return definitions


def embedded_object_meta(description: str | None = None) -> Schema:
    """ObjectMeta as the apiserver keeps it inside templates: only these five fields survive."""
    string_map = {"additionalProperties": {"type": "string"}, "type": "object"}
    schema: Schema = {
        "properties": {
            "annotations": dict(string_map),
            "finalizers": {"items": {"type": "string"}, "type": "array"},
            "labels": dict(string_map),
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
        "type": "object",
    }
    if description:
        schema["description"] = description
    return schema


def int_or_string(pattern: str | None = None) -> Schema:
    schema: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    if pattern:
        schema["pattern"] = pattern
    return schema


class EmbeddedSchemas:
    """Converts Kubernetes definitions into inlined, structural CRD schemas."""

    def __init__(self, definitions: Mapping[str, Schema] | None = None) -> None:
        self._definitions = definitions if definitions is not None else load_definitions()

    def schema(self, name: str, description: str | None = None) -> Schema:
        """The structural schema of definition ``name``; ``description`` overrides the type's own."""
        return self._named(name, description, stack=())

    def _named(self, name: str, description: str | None, stack: tuple[str, ...]) -> Schema:
        if name in stack:
            # Recursive Kubernetes types (JSONSchemaProps) cannot be inlined; none are embedded today.
            raise ValueError(f"recursive definition {name} via {' -> '.join(stack)}")
        special = self._special(name)
        if special is not None:
            schema = special
        else:
            schema = self._convert(self._definitions[name], name, (*stack, name))
            if name in _ATOMIC_BY_EMBEDDING:
                schema["x-kubernetes-map-type"] = "atomic"
        if description:
            schema["description"] = description
        return schema

    def _special(self, name: str) -> Schema | None:
        if name == _INT_OR_STRING:
            return int_or_string()
        if name == _QUANTITY:
            return int_or_string(QUANTITY_PATTERN)
        if name in _TIME_TYPES:
            return {"format": "date-time", "type": "string"}
        if name == OBJECT_META:
            return embedded_object_meta()
        return None

    def _convert(self, source: Schema, owner: str, stack: tuple[str, ...]) -> Schema:
        if "$ref" in source:
            return self._named(_ref_name(source["$ref"]), source.get("description"), stack)
        schema: Schema = {k: copy.deepcopy(v) for k, v in source.items() if k in _KEPT_KEYWORDS}
        if "format" in schema and schema["format"] not in _KEPT_FORMATS:
            del schema["format"]
        kind = _plain_type(source.get("type"))
        if kind is not None:
            schema["type"] = kind
        if "properties" in source:
            schema["properties"] = {
                prop: self._property(owner, prop, sub, stack) for prop, sub in source["properties"].items()
            }
        if "items" in source:
            schema["items"] = self._convert(source["items"], owner, stack)
        if isinstance(source.get("additionalProperties"), dict):
            schema["additionalProperties"] = self._convert(source["additionalProperties"], owner, stack)
        return schema

    def _property(self, owner: str, prop: str, source: Schema, stack: tuple[str, ...]) -> Schema:
        schema = self._convert(source, owner, stack)
        has_default, value = _field_default(owner, prop)
        if has_default:
            schema["default"] = value
        schema.update(copy.deepcopy(dict(FIELD_VALIDATIONS.get((owner, prop), {}))))
        return schema


def _ref_name(ref: str) -> str:
    if not ref.startswith(_REF_PREFIX):
        raise ValueError(f"unsupported $ref {ref!r}")
    return ref[len(_REF_PREFIX) :]


def _plain_type(kind: Any) -> str | None:
    """JSON-Schema ``["string", "null"]`` → ``"string"``: optional fields are not nullable in CRDs."""
    if kind is None or isinstance(kind, str):
        return kind
    concrete = [k for k in kind if k != "null"]
    if len(concrete) != 1:
        raise ValueError(f"cannot express type {kind!r} structurally")
    return str(concrete[0])
