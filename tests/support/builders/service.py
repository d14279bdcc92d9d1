"""Services: the headless Services that give a group (or a DisaggregatedSet role) its DNS names."""

from __future__ import annotations

from typing import Self

from tests.support.builders.common import NS, ObjectBuilder


class ServiceBuilder(ObjectBuilder):
    """`ServiceBuilder("test-sample").headless({LABEL_SET_NAME: "test-sample"}).obj()`."""

    def __init__(self, name: str, namespace: str = NS) -> None:
        super().__init__("v1", "Service", name, namespace)

    def headless(self, selector: dict[str, str]) -> Self:
        self._obj["spec"] = {"clusterIP": "None", "selector": dict(selector)}
        return self

    def publish_not_ready_addresses(self) -> Self:
        """DNS for pods before they are Ready: a group's pods must find their leader to start."""
        self._obj["spec"]["publishNotReadyAddresses"] = True
        return self
