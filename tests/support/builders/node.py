"""Nodes, as tests register them (no kubelet reports their status unless the test patches it)."""

from __future__ import annotations

from typing import Self

from tests.support.builders.common import ObjectBuilder


class NodeBuilder(ObjectBuilder):
    """`NodeBuilder("pool-a-1").label(TOPOLOGY_KEY, "pool-a").obj()`."""

    def __init__(self, name: str) -> None:
        super().__init__("v1", "Node", name, None)

    def condition(self, kind: str, status: str) -> Self:
        self._obj.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": kind, "status": status}
        )
        return self
