"""The real nodes' network: a bridge in the host namespace, one network namespace per node, routes.

Built and torn down with iproute2 (`ip`); see addresses.py for the picture. Idempotent teardown: it
removes whatever of ours it finds (bridge, node namespaces, the pod sandboxes' namespaces left by a
killed containerd), so `lws cluster down` also cleans up after a crash.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from leaderworkerset.devcluster.realnodes import addresses
from leaderworkerset.devcluster.realnodes.addresses import RealNode


class NetworkError(RuntimeError):
    """An `ip` command failed."""


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise NetworkError(f"`{' '.join(argv)}` failed: {proc.stderr.strip()}")
    return proc


def _sysctl(netns: str, key: str, value: str) -> None:
    # /proc/sys/net is per network namespace; write it from inside the namespace.
    subprocess.run(
        ["ip", "netns", "exec", netns, "sh", "-c", f"echo {value} > /proc/sys/{key.replace('.', '/')}"],
        check=True,
        capture_output=True,
    )


def bridge_exists() -> bool:
    return Path(f"/sys/class/net/{addresses.BRIDGE}").exists()


def create(nodes: Sequence[RealNode]) -> None:
    """The bridge, each node's namespace and veth, and every route between them."""
    _ip("link", "add", addresses.BRIDGE, "type", "bridge")
    _ip(
        "addr", "add", f"{addresses.HOST_ADDRESS}/{addresses.NODE_NETWORK.prefixlen}", "dev", addresses.BRIDGE
    )
    _ip("link", "set", addresses.BRIDGE, "up")
    for node in nodes:
        _ip("netns", "add", node.netns)
        _ip("link", "add", node.host_veth, "type", "veth", "peer", "name", "eth0", "netns", node.netns)
        _ip("link", "set", node.host_veth, "master", addresses.BRIDGE, "up")
        _ip("link", "set", "lo", "up", netns=node.netns)
        _ip("addr", "add", f"{node.ip}/{addresses.NODE_NETWORK.prefixlen}", "dev", "eth0", netns=node.netns)
        _ip("link", "set", "eth0", "up", netns=node.netns)
        # No default route: an address outside the test block is unreachable from a node and its pods.
        _ip("route", "add", addresses.TEST_BLOCK, "via", addresses.HOST_ADDRESS, netns=node.netns)
        for other in nodes:
            if other != node:
                _ip("route", "add", other.pod_cidr, "via", other.ip, netns=node.netns)
        _ip("route", "add", node.pod_cidr, "via", node.ip)
        _sysctl(node.netns, "net.ipv4.ip_forward", "1")
        # Service traffic between two pods of one node crosses cni0; kube-proxy's rules must see it.
        _sysctl(node.netns, "net.bridge.bridge-nf-call-iptables", "1")


def namespaces() -> list[str]:
    """The network namespaces of real nodes that exist on this machine, whoever made them."""
    listed = _ip("netns", "list", check=False).stdout.splitlines()
    return sorted(
        n
        for n in (line.split()[0] for line in listed if line.strip())
        if n.startswith(addresses.NETNS_PREFIX)
    )


def in_use() -> bool:
    """Whether a process still runs in a real node's namespace: a live cluster's containerd, kubelet
    and kube-proxy all do, so a bridge whose namespaces are empty was left by a cluster that died
    without its teardown (a killed test run, a session ended mid-test)."""
    return any(_ip("netns", "pids", ns, check=False).stdout.strip() for ns in namespaces())


def remove_stale() -> list[str]:
    """Remove a dead cluster's network (see `in_use`): every real node's namespace and route, and the
    bridge; what was removed."""
    return remove(addresses.real_nodes(addresses.MAX_NODES))  # no cluster has more nodes


def remove(nodes: Sequence[RealNode]) -> list[str]:
    """Remove what `create` made and the pod namespaces containerd left; what was removed."""
    removed = []
    for node in nodes:
        if _ip("netns", "del", node.netns, check=False).returncode == 0:
            removed.append(f"netns {node.netns}")
        _ip("route", "del", node.pod_cidr, check=False)
    if bridge_exists():
        _ip("link", "del", addresses.BRIDGE, check=False)
        removed.append(f"bridge {addresses.BRIDGE}")
    return removed


def set_link(node: RealNode, up: bool) -> None:
    """Cut a node off the bridge (its host-side veth down: nothing reaches it or leaves it, the API
    server included) or plug it back in; the routes through it come back with the link."""
    _ip("link", "set", node.host_veth, "up" if up else "down")


def in_netns(netns: str, argv: Sequence[str]) -> list[str]:
    """`argv` run in a node's network namespace only: the mount namespace stays the host's, so the
    volumes the kubelet mounts are the ones containerd bind-mounts into containers (`ip netns exec`
    would give each process a private mount namespace)."""
    return ["nsenter", f"--net=/run/netns/{netns}", "--", *argv]
