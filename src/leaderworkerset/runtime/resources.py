"""Where each kind lives on the API server."""

from __future__ import annotations

from dataclasses import dataclass

from leaderworkerset.api import constants as c


@dataclass(frozen=True)
class ResourceRef:
    """group/version/plural of a kind, enough to build REST paths."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def _prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str | None = None) -> str:
        """The list/watch/create path; namespace None means all namespaces."""
        if self.namespaced and namespace:
            return f"{self._prefix()}/namespaces/{namespace}/{self.plural}"
        return f"{self._prefix()}/{self.plural}"

    def object_path(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path


PODS = ResourceRef("", "v1", "Pod", "pods")
SERVICES = ResourceRef("", "v1", "Service", "services")
CONFIGMAPS = ResourceRef("", "v1", "ConfigMap", "configmaps")
NODES = ResourceRef("", "v1", "Node", "nodes", namespaced=False)
NAMESPACES = ResourceRef("", "v1", "Namespace", "namespaces", namespaced=False)
STATEFULSETS = ResourceRef("apps", "v1", "StatefulSet", "statefulsets")
DEPLOYMENTS = ResourceRef("apps", "v1", "Deployment", "deployments")
CONTROLLER_REVISIONS = ResourceRef("apps", "v1", "ControllerRevision", "controllerrevisions")
PODDISRUPTIONBUDGETS = ResourceRef("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
LEASES = ResourceRef("coordination.k8s.io", "v1", "Lease", "leases")
EVENTS = ResourceRef("events.k8s.io", "v1", "Event", "events")
# core/v1 events: the API that takes `involvedObject.*` and `reason` field selectors.
CORE_EVENTS = ResourceRef("", "v1", "Event", "events")

LEADERWORKERSETS = ResourceRef(c.LWS_GROUP, c.LWS_VERSION, c.LWS_KIND, c.LWS_PLURAL)
DISAGGREGATEDSETS = ResourceRef(c.DS_GROUP, c.DS_VERSION, c.DS_KIND, c.DS_PLURAL)
DS_ROLE_SCALERS = ResourceRef(c.DS_GROUP, c.DS_VERSION, c.DSRS_KIND, c.DSRS_PLURAL)

__all__ = [
    "CONFIGMAPS",
    "CONTROLLER_REVISIONS",
    "CORE_EVENTS",
    "DEPLOYMENTS",
    "DISAGGREGATEDSETS",
    "DS_ROLE_SCALERS",
    "EVENTS",
    "LEADERWORKERSETS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "SERVICES",
    "STATEFULSETS",
    "ResourceRef",
]
