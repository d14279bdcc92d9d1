"""The offline pruner/defaulter: API-server semantics on small schemas."""

from __future__ import annotations

from typing import Any

import pytest

from leaderworkerset.crd.structural import default, prune, prune_and_default

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "Static"},
                "nullable": {"type": "string", "nullable": True, "default": "x"},
                "strategy": {
                    "type": "object",
                    "default": {},
                    "properties": {"type": {"type": "string", "default": "RollingUpdate"}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "size": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                },
            },
        }
    },
}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({"replicas": 3, "bogus": 1}, {"replicas": 3}, id="unknown field dropped"),
        pytest.param({"labels": {"a": "b"}}, {"labels": {"a": "b"}}, id="map values kept"),
        pytest.param({"ports": [{"port": 1, "x": 2}]}, {"ports": [{"port": 1}]}, id="inside list items"),
        pytest.param({"free": {"any": {"thing": 1}}}, {"free": {"any": {"thing": 1}}}, id="preserved"),
        pytest.param({"mode": None}, {}, id="null in non-nullable dropped"),
        pytest.param({"nullable": None}, {"nullable": None}, id="null in nullable kept"),
        pytest.param({"size": "50%"}, {"size": "50%"}, id="int-or-string kept"),
    ],
)
def test_prune(spec: dict[str, Any], want: dict[str, Any]) -> None:
    assert prune({"spec": spec}, SCHEMA) == {"spec": want}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {},
            {"replicas": 1, "mode": "Static", "nullable": "x", "strategy": {"type": "RollingUpdate"}},
            id="empty spec gets every default, recursively into a defaulted object",
        ),
        pytest.param(
            {"replicas": 0, "mode": "External", "nullable": None, "strategy": {"type": "Other"}},
            {"replicas": 0, "mode": "External", "nullable": None, "strategy": {"type": "Other"}},
            id="set values win, even zero and explicit null in a nullable field",
        ),
        pytest.param(
            {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]},
            {
                "replicas": 1,
                "mode": "Static",
                "nullable": "x",
                "strategy": {"type": "RollingUpdate"},
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            },
            id="list items defaulted",
        ),
    ],
)
def test_default(spec: dict[str, Any], want: dict[str, Any]) -> None:
    assert default({"spec": spec}, SCHEMA) == {"spec": want}


def test_null_in_non_nullable_is_pruned_then_defaulted() -> None:
    stored = prune_and_default({"spec": {"mode": None}}, SCHEMA)
    assert stored["spec"]["mode"] == "Static"


def test_root_metadata_is_left_to_the_api_server() -> None:
    metadata = {"name": "x", "labels": {"a": "b"}, "creationTimestamp": None}
    stored = prune_and_default({"metadata": metadata, "spec": {}}, SCHEMA)
    assert stored["metadata"] == metadata


def test_input_is_not_modified() -> None:
    obj: dict[str, Any] = {"spec": {"bogus": 1}}
    prune_and_default(obj, SCHEMA)
    assert obj == {"spec": {"bogus": 1}}
