"""OpenAPI v3 structural schemas from msgspec models (``msgspec.inspect``).

Our own Structs (``leaderworkerset.api``) become object schemas field by field; lightkube's Structs
(PodTemplateSpec, PersistentVolumeClaim, Condition, ...) are replaced by the Kubernetes definition
of the same name through :class:`~leaderworkerset.crd.embedded.EmbeddedSchemas`, so embedded types
carry the full upstream schema instead of an ad-hoc translation of lightkube's Python types.

Facts msgspec cannot express (int32 vs int64, CRD-only defaults, list-map markers, CEL rules, fields
that Go serialises without ``omitempty`` and are therefore required) come from a marker table keyed
by ``(StructName, json field name)``; Meta constraints (``ge``/``le``, lengths, patterns,
descriptions, ``extra_json_schema``) and ``Literal`` enums come from the models themselves.
"""

from __future__ import annotations

import inspect as pyinspect
from collections.abc import Mapping
from typing import Any, Final

import msgspec
import msgspec.inspect as mi

from leaderworkerset.api._base import EMBEDDED_TYPE_KEY
from leaderworkerset.crd.embedded import EmbeddedSchemas, embedded_object_meta, int_or_string

Schema = dict[str, Any]
Markers = Mapping[tuple[str, str], Mapping[str, Any]]

# Marker keys that are not schema keywords.
REQUIRED_MARKER: Final = "required"  # bool: the field is required in its parent (Go: no omitempty)
EMBEDDED_META_MARKER: Final = "embeddedObjectMeta"  # bool: ObjectMeta reduced as in templates
SKIP_MARKER: Final = "skip"  # bool: field not part of the CRD schema (client-side only)

# lightkube model modules → Kubernetes OpenAPI definition prefixes.
_LIGHTKUBE_PREFIXES: Final = {
    "meta_v1": "io.k8s.apimachinery.pkg.apis.meta.v1",
    "util_intstr": "io.k8s.apimachinery.pkg.util.intstr",
    "resource": "io.k8s.apimachinery.pkg.api.resource",
    "runtime": "io.k8s.apimachinery.pkg.runtime",
    "apiextensions_v1": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
    "apiregistration_v1": "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
}
_LIGHTKUBE_PACKAGE: Final = "lightkube.models."


def kubernetes_definition(cls: type) -> str | None:
    """``lightkube.models.core_v1.PodTemplateSpec`` → ``io.k8s.api.core.v1.PodTemplateSpec``."""
    module = cls.__module__
    if not module.startswith(_LIGHTKUBE_PACKAGE):
        return None
    short = module[len(_LIGHTKUBE_PACKAGE) :]
    prefix = _LIGHTKUBE_PREFIXES.get(short)
    if prefix is None:
        group, _, version = short.rpartition("_")
        prefix = f"io.k8s.api.{group}.{version}"
    return f"{prefix}.{cls.__name__}"


def _docstring_summary(cls: type) -> str | None:
    """The first paragraph of a model's own docstring (not an inherited one), as one line."""
    own = cls.__dict__.get("__doc__")
    doc = pyinspect.cleandoc(own) if isinstance(own, str) else None
    if not doc:
        return None
    first = doc.split("\n\n", 1)[0]
    return " ".join(first.split())


class SchemaBuilder:
    """Builds the structural schema of a Struct, consulting ``markers`` per field."""

    def __init__(
        self,
        markers: Markers,
        embedded: EmbeddedSchemas | None = None,
        descriptions: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self._markers = markers
        self._embedded = embedded if embedded is not None else EmbeddedSchemas()
        self._descriptions = descriptions or {}

    def struct(self, cls: type[msgspec.Struct]) -> Schema:
        info = mi.type_info(cls)
        if not isinstance(info, mi.StructType):
            raise TypeError(f"{cls!r} is not a msgspec Struct")
        return self._type(info, description=None)

    def _type(self, t: mi.Type, description: str | None) -> Schema:
        schema = self._bare(t)
        if description:
            schema["description"] = description
        return schema

    def _bare(self, t: mi.Type) -> Schema:
        if isinstance(t, mi.Metadata):
            return self._annotated(t)
        if isinstance(t, mi.UnionType):
            return self._union(t)
        if isinstance(t, mi.StructType):
            return self._struct(t)
        if isinstance(t, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
            return self._list(t)
        if isinstance(t, mi.DictType):
            return self._dict(t)
        return _scalar(t)

    def _annotated(self, t: mi.Metadata) -> Schema:
        definition = (t.extra or {}).get(EMBEDDED_TYPE_KEY)
        schema = self._embedded.schema(definition) if definition else self._bare(t.type)
        schema.update(t.extra_json_schema or {})
        return schema

    def _dict(self, t: mi.DictType) -> Schema:
        if isinstance(t.value_type, mi.AnyType):
            # An untyped object is how the models spell Go's empty structs (``basic: {}``): an object
            # with no known fields, exactly what controller-gen emits for an empty struct.
            return {"type": "object"}
        return {"additionalProperties": self._bare(t.value_type), "type": "object"}

    def _union(self, t: mi.UnionType) -> Schema:
        members = [m for m in t.types if not isinstance(m, mi.NoneType)]
        if len(members) == 1:
            return self._bare(members[0])
        kinds = {type(_unwrap(m)) for m in members}
        if kinds == {mi.IntType, mi.StrType}:
            return int_or_string()
        raise TypeError(f"union {t!r} has no structural schema")

    def _list(self, t: mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType) -> Schema:
        schema: Schema = {"items": self._bare(t.item_type), "type": "array"}
        if t.min_length is not None:
            schema["minItems"] = t.min_length
        if t.max_length is not None:
            schema["maxItems"] = t.max_length
        return schema

    def _struct(self, t: mi.StructType) -> Schema:
        definition = kubernetes_definition(t.cls)
        if definition is not None:
            return self._embedded.schema(definition)
        properties: Schema = {}
        required: list[str] = []
        for field in t.fields:
            marker = self._markers.get((t.cls.__name__, field.encode_name), {})
            if marker.get(SKIP_MARKER):
                continue
            properties[field.encode_name] = self._field(field, marker)
            self._describe(properties[field.encode_name], t.cls.__name__, field)
            if marker.get(REQUIRED_MARKER, False):
                required.append(field.encode_name)
        schema: Schema = {"properties": properties, "type": "object"}
        if required:
            schema["required"] = sorted(required)
        class_marker = self._markers.get((t.cls.__name__, ""), {})
        schema.update(_keywords(class_marker))
        summary = _docstring_summary(t.cls)
        if summary and "description" not in schema:
            schema["description"] = summary
        return schema

    def _field(self, field: mi.Field, marker: Mapping[str, Any]) -> Schema:
        schema = embedded_object_meta() if marker.get(EMBEDDED_META_MARKER) else self._bare(field.type)
        schema.update(_keywords(marker))
        return schema

    def _describe(self, schema: Schema, owner: str, field: mi.Field) -> None:
        """Table descriptions replace a type's generic text, never one the model gives itself."""
        text = self._descriptions.get((owner, field.encode_name))
        if text and not model_description(field.type):
            schema["description"] = text


def model_description(t: mi.Type) -> bool:
    if isinstance(t, mi.Metadata):
        return "description" in (t.extra_json_schema or {}) or model_description(t.type)
    if isinstance(t, mi.UnionType):
        return any(model_description(m) for m in t.types)
    return False


def _keywords(marker: Mapping[str, Any]) -> Schema:
    return {k: v for k, v in marker.items() if k not in (REQUIRED_MARKER, EMBEDDED_META_MARKER, SKIP_MARKER)}


def _unwrap(t: mi.Type) -> mi.Type:
    return _unwrap(t.type) if isinstance(t, mi.Metadata) else t


def _scalar(t: mi.Type) -> Schema:
    if isinstance(t, mi.BoolType):
        return {"type": "boolean"}
    if isinstance(t, mi.IntType):
        return _bounded({"type": "integer"}, t.ge, t.le, t.gt, t.lt)
    if isinstance(t, mi.FloatType):
        return _bounded({"type": "number"}, t.ge, t.le, t.gt, t.lt)
    if isinstance(t, mi.StrType):
        return _string(t)
    if isinstance(t, mi.LiteralType):
        return {"enum": list(t.values), "type": _literal_type(t.values)}
    if isinstance(t, mi.EnumType):
        return {"enum": [member.value for member in t.cls], "type": "string"}
    if isinstance(t, mi.DateTimeType):
        return {"format": "date-time", "type": "string"}
    raise TypeError(f"no structural schema for {t!r}")


def _bounded(schema: Schema, ge: Any, le: Any, gt: Any, lt: Any) -> Schema:
    if ge is not None:
        schema["minimum"] = ge
    if le is not None:
        schema["maximum"] = le
    if gt is not None:
        schema["minimum"] = gt
        schema["exclusiveMinimum"] = True
    if lt is not None:
        schema["maximum"] = lt
        schema["exclusiveMaximum"] = True
    return schema


def _string(t: mi.StrType) -> Schema:
    schema: Schema = {"type": "string"}
    if t.min_length is not None:
        schema["minLength"] = t.min_length
    if t.max_length is not None:
        schema["maxLength"] = t.max_length
    if t.pattern is not None:
        schema["pattern"] = t.pattern
    return schema


def _literal_type(values: tuple[Any, ...]) -> str:
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    raise TypeError(f"mixed literal values {values!r}")
