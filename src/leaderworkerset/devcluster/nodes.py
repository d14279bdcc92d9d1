"""Fake nodes for the full cluster shape.

kwok adopts every Node object (``--manage-all-nodes``) and keeps it Ready; the
Node objects themselves are ours, so labels (hostname, zone, rack, nodepool)
and capacity (cpu, memory, pods, GPUs, TPUs) are whatever a test needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
TOPOLOGY_RACK = "cloud.provider.com/topology-rack"
NODE_POOL = "cloud.google.com/gke-nodepool"
HOSTNAME = "kubernetes.io/hostname"
# metrics-server scrapes a node's kubelet at this path instead of /metrics/resource: where kwok serves
# the node's simulated resource metrics (ClusterOptions.kubelet_metrics), as kwokctl's nodes say.
RESOURCE_METRICS_PATH = "metrics.k8s.io/resource-metrics-path"


@dataclass(frozen=True)
class NodeSpec:
    """One fake node. ``index`` picks a distinct pod CIDR so pod IPs differ per node."""

    name: str
    index: int
    zone: str = "zone-a"
    rack: str = "rack-0"
    nodepool: str = "pool-0"
    cpu: str = "64"
    memory: str = "256Gi"
    pods: str = "250"
    gpus: int = 8
    tpus: int = 4
    extra_labels: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": self.pods}
        if self.gpus:
            capacity["nvidia.com/gpu"] = str(self.gpus)
        if self.tpus:
            capacity["google.com/tpu"] = str(self.tpus)
        cidr = f"10.{64 + self.index // 256}.{self.index % 256}.0/24"
        labels = {
            HOSTNAME: self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            TOPOLOGY_ZONE: self.zone,
            TOPOLOGY_RACK: self.rack,
            NODE_POOL: self.nodepool,
            **self.extra_labels,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {
                    "kwok.x-k8s.io/node": "fake",
                    "node.alpha.kubernetes.io/ttl": "0",
                    RESOURCE_METRICS_PATH: f"/metrics/nodes/{self.name}/metrics/resource",
                },
            },
            "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
            # A kubelet registers its Node with status; the apiserver keeps it on create.
            "status": {"allocatable": capacity, "capacity": capacity},
        }


def default_nodes(count: int, zones: int = 2, racks_per_zone: int = 2) -> list[NodeSpec]:
    """``count`` nodes spread round-robin over zones, racks and node pools."""
    specs = []
    for i in range(count):
        zone = i % zones
        rack = (i // zones) % racks_per_zone
        specs.append(
            NodeSpec(
                name=f"kwok-node-{i}",
                index=i,
                zone=f"zone-{chr(ord('a') + zone)}",
                rack=f"rack-{zone}-{rack}",
                nodepool=f"pool-{zone}-{rack}",
            )
        )
    return specs
