"""Building blocks shared by the API models: the struct base class and schema annotations.

Decoding must be as lenient as Go's ``encoding/json``: a mutating webhook sees objects *before* the
API server validates them against the CRD schema, so a bad ``replicas`` must reach the validation
code (which words the error like upstream) instead of failing inside the decoder. That is why CRD
facts (minimum, maximum, enum, default, ...) are attached with ``msgspec.Meta(extra_json_schema=...)``,
which msgspec records for schema generation but does not enforce, rather than ``Meta(ge=...)``.
"""

from typing import Annotated, Any, Final

import msgspec


class ApiStruct(msgspec.Struct, omit_defaults=True, rename="camel", kw_only=True):
    """Base of every API struct: camelCase on the wire, unset (default) fields omitted like Go's
    ``omitempty``, unknown fields ignored (the API server prunes them anyway)."""


def crd(**schema: Any) -> msgspec.Meta:
    """OpenAPI facts for the CRD generator (not enforced at decode time, see module docstring).

    Keys are OpenAPI v3 keywords, including ``x-kubernetes-*`` extensions; pass those via a dict
    splat because of the dashes, e.g. ``crd(**{"x-kubernetes-int-or-string": True})``.
    """
    return msgspec.Meta(extra_json_schema=schema)


def required_object() -> dict[str, Any]:
    """Default for a required object field. A named factory (not ``dict``) on purpose: msgspec
    omits a field whose ``dict``/``list`` factory default is empty, and a required field such as
    ``workerTemplate: {}`` must still be written back, or the API server reports it missing."""
    return {}


def required_list() -> list[Any]:
    """Default for a required list field; see :func:`required_object`."""
    return []


# Marker for fields whose schema is a Kubernetes built-in type (the CRD generator substitutes the
# real OpenAPI definition). Stored in ``Meta.extra`` so it never leaks into a JSON schema.
EMBEDDED_TYPE_KEY: Final = "k8s_type"


def embedded(definition: str) -> msgspec.Meta:
    """Mark a field as holding the Kubernetes type ``definition`` (an OpenAPI definition name)."""
    return msgspec.Meta(extra={EMBEDDED_TYPE_KEY: definition})


POD_TEMPLATE_SPEC_DEF: Final = "io.k8s.api.core.v1.PodTemplateSpec"
PVC_DEF: Final = "io.k8s.api.core.v1.PersistentVolumeClaim"
PVC_RETENTION_POLICY_DEF: Final = "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy"
OBJECT_META_DEF: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CONDITION_DEF: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Condition"

Int32 = Annotated[int, crd(type="integer", format="int32")]
Int64 = Annotated[int, crd(type="integer", format="int64")]
IntOrString = Annotated[int | str, crd(**{"x-kubernetes-int-or-string": True})]

# A pod template kept as the raw JSON object the API server sent (see leaderworkerset.py for why).
RawPodTemplate = Annotated[dict[str, Any], embedded(POD_TEMPLATE_SPEC_DEF)]


def enum_of(values: tuple[str, ...], default: str | None = None) -> msgspec.Meta:
    """A string restricted to ``values`` (``+kubebuilder:validation:Enum``), optionally defaulted."""
    if default is None:
        return crd(type="string", enum=list(values))
    return crd(type="string", enum=list(values), default=default)


def list_map(*keys: str) -> msgspec.Meta:
    """A list that the API server merges as a map keyed by ``keys`` (``+listType=map``)."""
    return crd(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)})
