"""The embedded-type defaults table against what kube-apiserver itself publishes (/openapi/v3).

kubernetes-validate's bundled definitions carry no defaults, so ``embedded.FIELD_DEFAULTS`` lists
them by hand; this test keeps that table honest against the real 1.37 API server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from leaderworkerset.crd.embedded import FIELD_DEFAULTS, EmbeddedSchemas
from leaderworkerset.devcluster.cluster import LocalCluster
from tests.integration.crd.objects import kubectl

pytestmark = pytest.mark.cluster

ROOTS = ("io.k8s.api.core.v1.PodTemplateSpec", "io.k8s.api.core.v1.PersistentVolumeClaim")
_REF = "#/components/schemas/"

# `+default=ref(...)` markers: the API server resolves them, controller-gen does not emit them, and
# upstream's CRDs do not have them — so neither do ours.
NOT_EMITTED_BY_CONTROLLER_GEN = {
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "cachingMode"),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "kind"),
}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            yield ref[len(_REF) :]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        pending.extend(_refs(schemas[name]))
    return seen


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, {}, [])


async def test_embedded_defaults_agree_with_the_api_server(apiserver_cluster: LocalCluster) -> None:
    document = json.loads(await kubectl(apiserver_cluster, "get", "--raw", "/openapi/v3/api/v1"))
    schemas: dict[str, Any] = document["components"]["schemas"]
    reachable = _closure(schemas, ROOTS)
    published = {
        (name, prop): sub["default"]
        for name in reachable
        for prop, sub in schemas[name].get("properties", {}).items()
        if "default" in sub
    }
    ours = {
        (name, prop): sub["default"]
        for name in reachable
        for prop, sub in EmbeddedSchemas().schema(name).get("properties", {}).items()
        if "default" in sub
    }
    # Every default we emit is one the API server publishes for the same field ...
    assert {key: published.get(key) for key in ours} == ours
    # ... and every meaningful default it publishes is ours. Zero values ("", 0, {}) that we do not
    # list are openapi-gen's annotation of non-omitempty fields, not `+default` markers: controller-gen
    # does not emit them and upstream's CRDs do not have them.
    meaningful = {
        key: value
        for key, value in published.items()
        if not _is_zero(value) and key not in NOT_EMITTED_BY_CONTROLLER_GEN
    }
    assert {key: ours.get(key) for key in meaningful} == meaningful
    assert {key for key in FIELD_DEFAULTS if key[0] in reachable} <= set(ours)
