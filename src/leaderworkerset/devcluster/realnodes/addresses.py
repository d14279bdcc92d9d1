"""Where the real nodes live on this machine's network: pure data, the one place for every address.

Everything is inside 198.18.0.0/15, the block reserved for network tests (RFC 2544), and inside
network namespaces the cluster creates, so that nothing reaches or is routed off the machine:

    host netns ──── bridge lws0 198.18.0.1/24 (kube-apiserver listens here)
                      │ veth lws0-n1        │ veth lws0-n2
    netns lws-node-1  eth0 198.18.0.11      netns lws-node-2  eth0 198.18.0.12
      containerd, kubelet, kube-proxy         containerd, kubelet, kube-proxy
      cni0 198.18.129.1/24 ── pods            cni0 198.18.130.1/24 ── pods

Each node routes the other nodes' pod ranges straight to them over the bridge (no host forwarding);
the host routes every pod range to its node, so the API server reaches webhook pods. Services take
addresses from 198.19.0.0/16 and exist only as kube-proxy rules inside each node's namespace.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final

BRIDGE: Final = "lws0"
NODE_NETWORK: Final = ipaddress.IPv4Network("198.18.0.0/24")
HOST_ADDRESS: Final = "198.18.0.1"
# Everything the cluster uses; a node sends it to the host unless a more specific route says otherwise.
TEST_BLOCK: Final = "198.18.0.0/15"
POD_NETWORK: Final = ipaddress.IPv4Network("198.18.128.0/17")
SERVICE_NETWORK: Final = "198.19.0.0/16"
KUBERNETES_SERVICE_IP: Final = "198.19.0.1"
DNS_SERVICE_IP: Final = "198.19.0.10"
CLUSTER_DOMAIN: Final = "cluster.local"
# Real nodes are named with this prefix; the pod reaper (which plays the kubelet for kwok's fake
# nodes) leaves their pods to their kubelets.
NODE_NAME_PREFIX: Final = "real-node-"
NETNS_PREFIX: Final = "lws-node-"
MAX_NODES: Final = 8


@dataclass(frozen=True)
class RealNode:
    index: int  # from 1

    @property
    def name(self) -> str:
        return f"{NODE_NAME_PREFIX}{self.index}"

    @property
    def ip(self) -> str:
        return str(NODE_NETWORK.network_address + 10 + self.index)

    @property
    def pod_cidr(self) -> str:
        return str(list(POD_NETWORK.subnets(new_prefix=24))[self.index])

    @property
    def pod_gateway(self) -> str:
        return str(ipaddress.IPv4Network(self.pod_cidr).network_address + 1)

    @property
    def netns(self) -> str:
        return f"{NETNS_PREFIX}{self.index}"

    @property
    def host_veth(self) -> str:
        return f"{BRIDGE}-n{self.index}"


def real_nodes(count: int) -> list[RealNode]:
    if not 0 <= count <= MAX_NODES:
        raise ValueError(f"--real-nodes must be between 0 and {MAX_NODES}, not {count}")
    return [RealNode(i) for i in range(1, count + 1)]
