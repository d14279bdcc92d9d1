"""Schema building from msgspec models: the model conventions of leaderworkerset.api."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
import pytest
from lightkube.models.core_v1 import PersistentVolumeClaim

from leaderworkerset.api._base import POD_TEMPLATE_SPEC_DEF, ApiStruct, Int32, IntOrString, crd, embedded
from leaderworkerset.crd.builder import (
    EMBEDDED_META_MARKER,
    REQUIRED_MARKER,
    SKIP_MARKER,
    SchemaBuilder,
    kubernetes_definition,
)
from leaderworkerset.crd.embedded import EmbeddedSchemas

EMBEDDED: dict[str, Any] = {
    "io.k8s.api.core.v1.PodTemplateSpec": {"description": "Pod template.", "type": "object"},
    "io.k8s.api.core.v1.PersistentVolumeClaim": {"description": "A claim.", "type": "object"},
}


class Inner(ApiStruct):
    """Inner part.

    Second paragraph is not part of the description.
    """

    key: str = ""


class Sample(ApiStruct):
    replicas: Annotated[Int32, crd(minimum=0, default=1)] | None = None
    mode: Literal["A", "B"] | None = None
    surge: IntOrString = 0
    template: Annotated[dict[str, Any], embedded(POD_TEMPLATE_SPEC_DEF)] = msgspec.field(default_factory=dict)
    claims: list[PersistentVolumeClaim] | None = None
    labels: dict[str, str] | None = None
    empty: dict[str, Any] | None = None
    inner: Inner | None = None
    described: Annotated[str, crd(description="From the model.")] = ""
    hidden: str = ""
    metadata: dict[str, Any] | None = None


MARKERS = {
    ("Sample", "inner"): {REQUIRED_MARKER: True},
    ("Sample", "hidden"): {SKIP_MARKER: True},
    ("Sample", "metadata"): {EMBEDDED_META_MARKER: True},
    ("Sample", ""): {"x-kubernetes-validations": [{"rule": "true"}]},
}
DESCRIPTIONS = {("Sample", "replicas"): "Table text.", ("Sample", "described"): "Loses to the model."}


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    return SchemaBuilder(MARKERS, EmbeddedSchemas(EMBEDDED), DESCRIPTIONS).struct(Sample)


@pytest.mark.parametrize(
    ("prop", "want"),
    [
        pytest.param(
            "replicas",
            {"type": "integer", "format": "int32", "minimum": 0, "default": 1, "description": "Table text."},
            id="Meta facts and table description",
        ),
        pytest.param("mode", {"type": "string", "enum": ["A", "B"]}, id="Literal becomes enum"),
        pytest.param(
            "surge",
            {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            id="int or string",
        ),
        pytest.param("template", {"description": "Pod template.", "type": "object"}, id="k8s_type marker"),
        pytest.param(
            "claims",
            {"items": {"description": "A claim.", "type": "object"}, "type": "array"},
            id="lightkube struct becomes its Kubernetes definition",
        ),
        pytest.param(
            "labels", {"additionalProperties": {"type": "string"}, "type": "object"}, id="string map"
        ),
        pytest.param("empty", {"type": "object"}, id="untyped object is an empty struct"),
        pytest.param(
            "inner",
            {"description": "Inner part.", "properties": {"key": {"type": "string"}}, "type": "object"},
            id="nested struct with docstring summary",
        ),
        pytest.param("described", {"type": "string", "description": "From the model."}, id="model text wins"),
    ],
)
def test_field_schema(sample: dict[str, Any], prop: str, want: dict[str, Any]) -> None:
    assert sample["properties"][prop] == want


def test_struct_level_markers(sample: dict[str, Any]) -> None:
    assert sample["required"] == ["inner"]
    assert sample["x-kubernetes-validations"] == [{"rule": "true"}]
    assert "hidden" not in sample["properties"]
    assert sorted(sample["properties"]["metadata"]["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]


def test_inherited_docstrings_are_not_descriptions(sample: dict[str, Any]) -> None:
    assert "description" not in sample


@pytest.mark.parametrize(
    ("module", "name", "want"),
    [
        pytest.param(
            "lightkube.models.core_v1", "PodTemplateSpec", "io.k8s.api.core.v1.PodTemplateSpec", id="core"
        ),
        pytest.param(
            "lightkube.models.apps_v1",
            "StatefulSetPersistentVolumeClaimRetentionPolicy",
            "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy",
            id="apps",
        ),
        pytest.param(
            "lightkube.models.meta_v1",
            "Condition",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
            id="meta",
        ),
        pytest.param(
            "lightkube.models.scheduling_v1alpha3",
            "TopologyConstraint",
            "io.k8s.api.scheduling.v1alpha3.TopologyConstraint",
            id="versioned group",
        ),
        pytest.param("leaderworkerset.api.leaderworkerset", "LeaderWorkerSet", None, id="ours"),
    ],
)
def test_kubernetes_definition(module: str, name: str, want: str | None) -> None:
    cls = type(name, (), {"__module__": module})
    assert kubernetes_definition(cls) == want


def test_unsupported_union_is_refused() -> None:
    class Bad(ApiStruct):
        value: int | bool = 0

    with pytest.raises(TypeError, match="union"):
        SchemaBuilder({}, EmbeddedSchemas(EMBEDDED)).struct(Bad)
