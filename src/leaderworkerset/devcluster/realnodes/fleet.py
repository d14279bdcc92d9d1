"""Start and remove a cluster's real nodes: the I/O around node.py's configurations.

Two phases, because the API server must listen on the bridge before anything else starts:
`prepare_host` (packages, binaries, the network) runs before etcd, `start_nodes` once the control
plane answers. `teardown` needs nothing but the cluster's work dir and node count, so `lws cluster down`
from another process removes every container, mount, cgroup, namespace and the bridge, even after a
crash.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.devcluster import kube
from leaderworkerset.devcluster import pki as pki_mod
from leaderworkerset.devcluster.processes import terminate, wait_for
from leaderworkerset.devcluster.realnodes import addons, addresses, images, network, node
from leaderworkerset.devcluster.realnodes.addresses import RealNode
from leaderworkerset.devcluster.realnodes.binaries import (
    COREDNS_VERSION,
    ensure_host_packages,
    ensure_node_binaries,
)
from leaderworkerset.devcluster.realnodes.node import NodePaths

Attach = Callable[[str, list[str]], subprocess.Popen[bytes]]
CGROUP_FS = Path("/sys/fs/cgroup")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
SHIM_SOCKETS = Path("/run/containerd/s")


class FleetError(RuntimeError):
    """Real nodes could not be set up."""


def paths_of(workdir: Path, real: RealNode) -> NodePaths:
    return NodePaths(workdir / "nodes" / real.name)


def prepare_host(nodes: Sequence[RealNode]) -> None:
    """Debian packages and the network; refused while another cluster's real nodes exist."""
    if os.geteuid() != 0:
        raise FleetError("real nodes need root (network namespaces, mounts, cgroups)")
    if network.bridge_exists():
        if network.in_use():
            raise FleetError(
                f"the bridge {addresses.BRIDGE} exists: another local cluster runs real nodes on this "
                "machine (one at a time); stop it with `lws cluster down --name <its name>`"
            )
        # Nothing runs in its nodes' namespaces: a cluster that died without its teardown left it.
        removed = network.remove_stale()
        print(f"real nodes: removed what a dead local cluster left: {', '.join(removed)}", file=sys.stderr)
    ensure_host_packages()
    network.create(nodes)


def _kubeconfig(server: str, ca: Path, cert: Path, key: Path) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local",
    }


def _cgroup_dirs(real: RealNode) -> list[Path]:
    """The node's cgroup in every mounted hierarchy (v1 controllers and the named/unified ones)."""
    return [h / node.cgroup_root(real).lstrip("/") for h in sorted(CGROUP_FS.iterdir()) if h.is_dir()]


def _wait_for_socket(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise FleetError(f"containerd exited ({proc.returncode}) before creating {path}")
        if time.monotonic() > deadline:
            raise FleetError(f"containerd did not create {path} within {timeout:.0f}s")
        time.sleep(0.1)  # polling a socket file that containerd creates


def _ctr(bindir: Path, paths: NodePaths, *args: str) -> str:
    """`ctr` against the node's containerd in the CRI namespace; its output, or FleetError."""
    argv = [str(bindir / "ctr"), f"--address={paths.containerd_socket}", "--namespace=k8s.io", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise FleetError(f"ctr {' '.join(args)} on {paths.root.name}: {proc.stderr.strip()[-1000:]}")
    return proc.stdout


def import_images(bindir: Path, paths: NodePaths, archives: Sequence[Path]) -> None:
    """Load image archives into the node's containerd (CRI namespace `k8s.io`), unpacked."""
    for archive in archives:
        _ctr(bindir, paths, "images", "import", "--local", str(archive))


def import_into_running(workdir: Path, bindir: Path, count: int, archives: Sequence[Path]) -> None:
    """Load image archives into every running node (e.g. a workload image asked for after the start)."""
    for real in addresses.real_nodes(count):
        import_images(bindir, paths_of(workdir, real), archives)


def tag_image(workdir: Path, bindir: Path, count: int, source: str, target: str) -> None:
    """Give an image every node holds a second reference (the same content under another name)."""
    for real in addresses.real_nodes(count):
        _ctr(bindir, paths_of(workdir, real), "images", "tag", "--force", source, target)


def running_tasks(workdir: Path, bindir: Path, real: RealNode) -> int:
    """How many containers the node's containerd reports running (it answers: it is up)."""
    listed = _ctr(bindir, paths_of(workdir, real), "tasks", "list").splitlines()[1:]
    return sum(1 for line in listed if line.split()[-1:] == ["RUNNING"])


def restart_containerd(real: RealNode, pid: int, *, workdir: Path, bindir: Path, attach: Attach) -> None:
    """Stop the node's containerd (SIGTERM, as a service manager does: its shims and so the containers
    run on) and start it again with the same configuration; returns once its socket exists."""
    paths = paths_of(workdir, real)
    terminate(pid)
    paths.containerd_socket.unlink(missing_ok=True)
    containerd = attach(
        f"{real.name}-containerd", network.in_netns(real.netns, node.containerd_argv(bindir, paths))
    )
    _wait_for_socket(paths.containerd_socket, containerd)


def start_nodes(
    nodes: Sequence[RealNode],
    *,
    workdir: Path,
    bindir: Path,
    pki: pki_mod.ClusterPKI,
    server: str,
    archives: Sequence[Path],
    attach: Attach,
) -> None:
    """containerd, kube-proxy and the kubelet of every node, each in its node's network namespace."""
    proxy_cert, proxy_key = pki_mod.issue_client(
        pki, "kube-proxy", "system:kube-proxy", "system:node-proxier"
    )
    for real in nodes:
        paths = paths_of(workdir, real)
        node.write_configs(real, paths, bindir / "cni", pki.ca_cert, yaml.safe_dump)
        cert, key = pki_mod.issue_client(pki, real.name, f"system:node:{real.name}", "system:nodes")
        paths.kubelet_kubeconfig.write_text(yaml.safe_dump(_kubeconfig(server, pki.ca_cert, cert, key)))
        paths.proxy_kubeconfig.write_text(
            yaml.safe_dump(_kubeconfig(server, pki.ca_cert, proxy_cert, proxy_key))
        )
        for directory in _cgroup_dirs(real):
            directory.mkdir(exist_ok=True)
        containerd = attach(
            f"{real.name}-containerd",
            network.in_netns(real.netns, node.containerd_argv(bindir, paths)),
        )
        _wait_for_socket(paths.containerd_socket, containerd)
        import_images(bindir, paths, archives)
        attach(f"{real.name}-kube-proxy", network.in_netns(real.netns, node.proxy_argv(bindir, paths)))
        attach(f"{real.name}-kubelet", network.in_netns(real.netns, node.kubelet_argv(bindir, real, paths)))


def _pids_in(directory: Path) -> set[int]:
    pids: set[int] = set()
    for procs in directory.rglob("cgroup.procs"):
        try:
            pids.update(int(line) for line in procs.read_text().split())
        except OSError:
            continue
    return pids


def _kill_containers(real: RealNode) -> int:
    """SIGKILL every process in the node's cgroups (its pods' containers); how many were found."""
    hierarchy = next((d for d in _cgroup_dirs(real) if d.exists()), None)
    if hierarchy is None:
        return 0
    seen: set[int] = set()
    deadline = time.monotonic() + 20
    while (pids := _pids_in(hierarchy)) and time.monotonic() < deadline:
        seen |= pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)  # the kernel removes killed processes from cgroup.procs asynchronously
    return len(seen)


def _shim_socket(cmdline: list[str]) -> Path | None:
    """The socket a runc shim serves: containerd names it by a hash of (address, namespace, id)
    under a machine-wide directory, so it outlives the node's directory unless removed."""
    args = dict(zip(cmdline[1::2], cmdline[2::2], strict=False))
    if not {"-address", "-namespace", "-id"} <= args.keys():
        return None
    key = f"{args['-address']}/{args['-namespace']}/{args['-id']}"
    return SHIM_SOCKETS / hashlib.sha256(key.encode()).hexdigest()


def _kill_shims(sockets: Sequence[Path]) -> int:
    """containerd's runc shims outlive containerd; stop the ones serving our nodes' daemons."""
    addresses_ = {str(s) for s in sockets}
    killed = 0
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            cmdline = [a.decode() for a in (proc_dir / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if not cmdline or "containerd-shim" not in cmdline[0]:
            continue
        if not addresses_ & set(cmdline):
            continue
        try:
            os.kill(int(proc_dir.name), signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
        socket = _shim_socket(cmdline)
        if socket is not None:
            socket.unlink(missing_ok=True)
    return killed


def _unmount_under(root: Path) -> int:
    """Detach every mount below `root` (overlay rootfs, volume tmpfs, pod netns), deepest first."""
    prefix = str(root) + "/"
    targets = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].replace("\\040", " ")
        if target.startswith(prefix):
            targets.append(target)
    for target in sorted(set(targets), key=len, reverse=True):
        subprocess.run(["umount", "--lazy", target], capture_output=True, check=False)
    return len(set(targets))


def _remove_cgroups(real: RealNode) -> None:
    for top in _cgroup_dirs(real):
        if not top.exists():
            continue
        for directory in sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        ):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def teardown(workdir: Path, count: int) -> list[str]:
    """Remove every trace of the real nodes (after their daemons were stopped); what was found."""
    nodes = addresses.real_nodes(count)
    report = []
    for real in nodes:
        killed = _kill_containers(real)
        if killed:
            report.append(f"{real.name}: {killed} container processes killed")
    shims = _kill_shims([paths_of(workdir, r).containerd_socket for r in nodes])
    if shims:
        report.append(f"{shims} containerd shims stopped")
    mounts = _unmount_under(workdir / "nodes")
    if mounts:
        report.append(f"{mounts} mounts detached")
    for real in nodes:
        _remove_cgroups(real)
    report.extend(network.remove(nodes))
    if CONTAINER_LOG_LINKS.is_dir():
        for link in CONTAINER_LOG_LINKS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(str(workdir) + "/"):
                link.unlink()
    return report


PROBE_IMAGE = "lws.local/probe:v1"
COREDNS_IMAGE = f"lws.local/coredns:{COREDNS_VERSION}"


def build_images(bindir: Path, out: Path) -> list[Path]:
    """The images every node holds: the pod sandbox, CoreDNS and the probe workload."""
    specs = [
        images.ImageSpec(ref=node.PAUSE_IMAGE, binary=bindir / "pause", entrypoint=("/pause",)),
        images.ImageSpec(ref=COREDNS_IMAGE, binary=bindir / "coredns", entrypoint=("/coredns",)),
        images.ImageSpec(
            ref=PROBE_IMAGE,
            binary=bindir / "probe",
            entrypoint=("/probe",),
            exposed_ports=("8080/tcp", "7070/tcp"),
        ),
    ]
    return [
        images.build_archive(spec, out / f"{spec.ref.split('/')[-1].replace(':', '-')}.tar") for spec in specs
    ]


def _node_ready(client: kube.RestClient, name: str) -> bool:
    found = client.get(f"/api/v1/nodes/{name}")
    return found is not None and kube.is_ready(found)


def _dns_available(client: kube.RestClient) -> bool:
    found = client.get(f"/apis/apps/v1/namespaces/{addons.NAMESPACE}/deployments/coredns") or {}
    return int((found.get("status") or {}).get("availableReplicas") or 0) >= 1


def wait_ready(
    client: kube.RestClient, nodes: Sequence[RealNode], *, timeout: float, alive: Callable[[], str | None]
) -> None:
    """Every kubelet registered and Ready, then cluster DNS deployed onto them and answering."""
    for real in nodes:
        wait_for(
            f"real node {real.name} Ready",
            functools.partial(_node_ready, client, real.name),
            timeout=timeout,
            alive=alive,
        )
    for obj in addons.coredns_objects(COREDNS_IMAGE):
        client.create(kube.collection_path(obj), obj)
    wait_for("CoreDNS available", functools.partial(_dns_available, client), timeout=timeout, alive=alive)


def prepare(count: int, kube_version: str) -> Path:
    """Before the control plane starts: the node binaries (built once) and the host's packages and
    network; returns the node binaries' directory."""
    bindir = ensure_node_binaries(kube_version)
    prepare_host(addresses.real_nodes(count))
    return bindir


def start(
    count: int,
    *,
    workdir: Path,
    bindir: Path,
    pki: pki_mod.ClusterPKI,
    kubeconfig: Path,
    extra_images: Sequence[Path],
    attach: Attach,
    alive: Callable[[], str | None],
    timeout: float,
) -> None:
    """Once the control plane answers: every node started, Ready, and cluster DNS serving."""
    nodes = addresses.real_nodes(count)
    archives = build_images(bindir, workdir / "images")
    client = kube.RestClient.from_kubeconfig(kubeconfig)
    start_nodes(
        nodes,
        workdir=workdir,
        bindir=bindir,
        pki=pki,
        server=client.server,
        archives=[*archives, *extra_images],
        attach=attach,
    )
    wait_ready(client, nodes, timeout=timeout, alive=alive)
