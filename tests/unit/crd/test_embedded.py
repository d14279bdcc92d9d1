"""Conversion of Kubernetes definitions into controller-gen's structural form."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.crd.embedded import (
    FIELD_DEFAULTS,
    FIELD_VALIDATIONS,
    QUANTITY_PATTERN,
    EmbeddedSchemas,
    load_definitions,
)

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
DEFS: dict[str, Any] = {
    "test.Thing": {
        "description": "A thing.",
        "type": ["object", "null"],
        "required": ["name"],
        "x-kubernetes-unions": [{"discriminator": "kind"}],
        "properties": {
            "name": {"type": "string", "description": "Its name."},
            "count": {"type": ["integer", "null"], "format": "int32"},
            "ratio": {"type": ["number", "null"], "format": "double"},
            "mode": {"type": ["string", "null"], "enum": ["A", "B"]},
            "child": {"$ref": "#/$defs/test.Child", "description": "Field text wins."},
            "plain": {"$ref": "#/$defs/test.Child"},
            "size": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
            "limits": {
                "type": ["object", "null"],
                "additionalProperties": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"},
            },
            "when": {"$ref": f"#/$defs/{META}.Time"},
            "metadata": {"$ref": f"#/$defs/{META}.ObjectMeta"},
            "items": {
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/test.Child"},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["key"],
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "key",
            },
        },
    },
    "test.Child": {
        "description": "Child type text.",
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {"key": {"type": "string"}},
    },
    "test.Loop": {"type": "object", "properties": {"self": {"$ref": "#/$defs/test.Loop"}}},
}


@pytest.fixture(scope="module")
def thing() -> dict[str, Any]:
    return EmbeddedSchemas(DEFS).schema("test.Thing")


@pytest.mark.parametrize(
    ("prop", "want"),
    [
        pytest.param("name", {"type": "string", "description": "Its name."}, id="plain string"),
        pytest.param("count", {"type": "integer", "format": "int32"}, id="null dropped from type"),
        pytest.param("ratio", {"type": "number"}, id="non-Go formats dropped"),
        pytest.param("mode", {"type": "string"}, id="enum tags of Go string types dropped"),
        pytest.param(
            "child",
            {
                "description": "Field text wins.",
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "properties": {"key": {"type": "string"}},
            },
            id="ref inlined with the field's description",
        ),
        pytest.param(
            "plain",
            {
                "description": "Child type text.",
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "properties": {"key": {"type": "string"}},
            },
            id="ref without field text keeps the type's",
        ),
        pytest.param(
            "size",
            {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            id="IntOrString",
        ),
        pytest.param(
            "limits",
            {
                "type": "object",
                "additionalProperties": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "pattern": QUANTITY_PATTERN,
                    "x-kubernetes-int-or-string": True,
                },
            },
            id="Quantity map",
        ),
        pytest.param("when", {"type": "string", "format": "date-time"}, id="Time"),
    ],
)
def test_property_conversion(thing: dict[str, Any], prop: str, want: dict[str, Any]) -> None:
    assert thing["properties"][prop] == want


def test_object_keywords(thing: dict[str, Any]) -> None:
    assert thing["type"] == "object"
    assert thing["required"] == ["name"]
    assert "x-kubernetes-unions" not in thing


def test_list_markers_kept_and_patch_strategy_dropped(thing: dict[str, Any]) -> None:
    items = thing["properties"]["items"]
    assert items["x-kubernetes-list-type"] == "map"
    assert items["x-kubernetes-list-map-keys"] == ["key"]
    assert not any(key.startswith("x-kubernetes-patch") for key in items)


def test_embedded_metadata_keeps_only_template_fields(thing: dict[str, Any]) -> None:
    assert sorted(thing["properties"]["metadata"]["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]


def test_recursive_definitions_are_refused() -> None:
    with pytest.raises(ValueError, match="recursive"):
        EmbeddedSchemas(DEFS).schema("test.Loop")


@pytest.mark.parametrize(
    "key",
    [pytest.param(k, id=f"{k[0].rsplit('.', 1)[1]}.{k[1]}") for k in (*FIELD_DEFAULTS, *FIELD_VALIDATIONS)],
)
def test_override_tables_name_real_kubernetes_fields(key: tuple[str, str]) -> None:
    definition, prop = key
    assert prop in load_definitions()[definition]["properties"]


@pytest.mark.parametrize(
    ("path", "want"),
    [
        pytest.param(("containers", "ports", "protocol"), "TCP", id="container port protocol"),
        pytest.param(("imagePullSecrets", "name"), "", id="local object reference name"),
    ],
)
def test_defaults_reach_the_pod_template(path: tuple[str, str, str], want: object) -> None:
    spec = EmbeddedSchemas().schema("io.k8s.api.core.v1.PodTemplateSpec")["properties"]["spec"]
    node = spec["properties"][path[0]]["items"]
    for name in path[1:-1]:
        node = node["properties"][name]["items"]
    assert node["properties"][path[-1]]["default"] == want
