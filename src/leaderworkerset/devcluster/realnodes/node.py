"""What one real node runs, as pure functions of its paths and addresses: containerd's configuration,
the CNI network, the kubelet's and kube-proxy's configurations and the command lines of all three.

A node is a network namespace (addresses.py) plus a directory: containerd keeps its images, snapshots,
pod sandboxes (netns mounts included) there; the kubelet its pods' volumes, logs and serving
certificate; so a node is removed by stopping its processes and unmounting under its directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderworkerset.devcluster.realnodes import addresses
from leaderworkerset.devcluster.realnodes.addresses import RealNode

RUNC = "/usr/sbin/runc"
PAUSE_IMAGE = "lws.local/pause:v1"


@dataclass(frozen=True)
class NodePaths:
    root: Path  # <cluster workdir>/nodes/<node name>

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def kubelet_dir(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    @property
    def proxy_config(self) -> Path:
        return self.root / "kube-proxy.yaml"

    @property
    def proxy_kubeconfig(self) -> Path:
        return self.root / "kube-proxy.kubeconfig"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def resolv_conf(self) -> Path:
        # Pods resolve cluster names only: the host's resolver is not reachable from a node anyway.
        return self.root / "resolv.conf"


def cgroup_root(node: RealNode) -> str:
    """The cgroup (in every hierarchy) under which this node's kubelet puts all its pods."""
    return f"/lws-{node.name}"


def containerd_config(paths: NodePaths, cni_bin: Path) -> str:
    # containerd 2.x reads version 3 and migrates it; every path is the node's own (runc's state
    # too), so several containerd daemons share the machine. NRI is off (its socket is machine-wide).
    # Unprivileged ports and ICMP (on by default) let non-root pods bind :53, as CoreDNS does.
    return f"""version = 3
root = '{paths.containerd_root}'
state = '{paths.containerd_state}'

[grpc]
  address = '{paths.containerd_socket}'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{PAUSE_IMAGE}'
  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    # This machine's root lacks CAP_SYS_RESOURCE, so no process may lower its OOM score below
    # containerd's own; without this every pod sandbox (-998) and Guaranteed pod (-997) fails.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '{RUNC}'
          Root = '{paths.containerd_state / "runc"}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['{cni_bin}']
      conf_dir = '{paths.cni_conf_dir}'
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
  [plugins.'io.containerd.internal.v1.opt']
    path = '{paths.root / "containerd" / "opt"}'
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
"""


def cni_config(node: RealNode, paths: NodePaths) -> dict[str, Any]:
    """A bridge `cni0` inside the node's namespace, addresses from the node's pod range."""
    return {
        "cniVersion": "1.0.0",
        "name": "lws",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                # No masquerading: pod addresses are routed as they are, and never off the machine.
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.pod_cidr, "gateway": node.pod_gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(paths.root / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(node: RealNode, paths: NodePaths, ca_cert: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This machine boots cgroup v1 (hybrid); the kubelet refuses it unless told otherwise.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root(node),
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "address": node.ip,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [addresses.DNS_SERVICE_IP],
        "clusterDomain": addresses.CLUSTER_DOMAIN,
        "resolvConf": str(paths.resolv_conf),
        "podLogsDir": str(paths.pod_logs),
        "failSwapOn": False,
        # Several kubelets share one disk and one memory: never evict for the machine's sake.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "0%", "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "registerNode": True,
        "nodeStatusUpdateFrequency": "4s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
        "protectKernelDefaults": False,
        "maxPods": 60,
    }


def kubelet_argv(bindir: Path, node: RealNode, paths: NodePaths) -> list[str]:
    return [
        str(bindir / "kubelet"),
        f"--config={paths.kubelet_config}",
        f"--kubeconfig={paths.kubelet_kubeconfig}",
        f"--root-dir={paths.kubelet_dir}",
        f"--cert-dir={paths.kubelet_dir / 'pki'}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.ip}",
        f"--node-labels=node.lws.local/real=true,topology.kubernetes.io/zone=real-{node.index}",
        "--v=1",
    ]


def proxy_config(node: RealNode, paths: NodePaths) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(paths.proxy_kubeconfig)},
        "hostnameOverride": node.name,
        "bindAddress": node.ip,
        "clusterCIDR": str(addresses.POD_NETWORK),
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        # The conntrack table size is machine-wide (read-only inside a namespace): leave it alone.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }


def proxy_argv(bindir: Path, paths: NodePaths) -> list[str]:
    return [str(bindir / "kube-proxy"), f"--config={paths.proxy_config}", "--v=1"]


def containerd_argv(bindir: Path, paths: NodePaths) -> list[str]:
    return [str(bindir / "containerd"), f"--config={paths.containerd_config}", "--log-level=warn"]


def write_configs(node: RealNode, paths: NodePaths, cni_bin: Path, ca_cert: Path, dump: Any) -> None:
    """Every file the node's three processes read (kubeconfigs are written by the caller)."""
    for directory in (paths.cni_conf_dir, paths.kubelet_dir, paths.pod_logs, paths.containerd_root):
        directory.mkdir(parents=True, exist_ok=True)
    paths.containerd_config.write_text(containerd_config(paths, cni_bin))
    (paths.cni_conf_dir / "10-lws.conflist").write_text(json.dumps(cni_config(node, paths), indent=2))
    paths.kubelet_config.write_text(dump(kubelet_config(node, paths, ca_cert)))
    paths.proxy_config.write_text(dump(proxy_config(node, paths)))
    paths.resolv_conf.write_text("")
