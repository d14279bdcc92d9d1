"""Build what a real node runs, from Go modules, into a versioned cache (like build.py's control plane).

    kubelet, kube-proxy              k8s.io/kubernetes (the cluster's version, gomod/k8s/<minor>)
    containerd, shim, ctr            github.com/containerd/containerd/v2 (gomod/containerd)
    cni/bridge, host-local, ...      github.com/containernetworking/plugins (gomod/cni)
    coredns                          github.com/coredns/coredns (gomod/coredns: the plugins it uses)
    pause, probe                     this repository (gomod/probe): the pod sandbox and the test workload

runc, iptables and conntrack are Debian packages the kubelet, containerd and kube-proxy call; they are
installed on first use (`ensure_host_packages`).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

from filelock import FileLock

from leaderworkerset.devcluster import build, versions
from leaderworkerset.devcluster.progress import run_step

CONTAINERD_VERSION: Final = "v2.4.2"
CNI_PLUGINS_VERSION: Final = "v1.10.0"
COREDNS_VERSION: Final = "v1.14.7"
RECIPE_REVISION: Final = "3"
CNI_PLUGINS: Final = ("bridge", "host-local", "loopback", "portmap")
NODE_BINARIES: Final = (
    "kubelet",
    "kube-proxy",
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "coredns",
    "pause",
    "probe",
    *(f"cni/{p}" for p in CNI_PLUGINS),
)
# Debian package → the command it provides.
HOST_PACKAGES: Final = {"runc": "runc", "iptables": "iptables", "conntrack": "conntrack"}
_CNI_PACKAGES: Final = {
    "bridge": "main/bridge",
    "host-local": "ipam/host-local",
    "loopback": "main/loopback",
    "portmap": "meta/portmap",
}


def unavailable_reason(kube_version: str | None = None) -> str | None:
    """Why real nodes cannot run Kubernetes `kube_version` here (its kubelet and kube-proxy cannot be
    built), or None when they can."""
    kube = versions.resolve_kubernetes_version(kube_version)
    reason = versions.NODES_UNAVAILABLE.get(versions.minor_of(kube))
    if reason is None:
        return None
    return (
        f"real nodes are not available on Kubernetes {kube}: {reason}; "
        f"use fake nodes, or real nodes on Kubernetes {versions.minor_of(versions.KUBERNETES_VERSION)}"
    )


def require_available(kube_version: str | None = None) -> None:
    """Refuse, before anything is built or started, a real-node cluster whose binaries cannot be built."""
    reason = unavailable_reason(kube_version)
    if reason is not None:
        raise build.BuildError(reason)


def node_bin_dir(kube_version: str | None = None) -> Path:
    kube = versions.resolve_kubernetes_version(kube_version)
    key = (
        f"node-{kube}_containerd-{CONTAINERD_VERSION}_cni-{CNI_PLUGINS_VERSION}_coredns-{COREDNS_VERSION}"
        f"_{build.go_version(kube)}_{versions.machine()}_r{RECIPE_REVISION}"
    )
    return versions.cache_root() / "nodes" / key


def _complete(path: Path) -> bool:
    return (path / build.COMPLETE_MARKER).is_file() and all((path / b).is_file() for b in NODE_BINARIES)


def ensure_node_binaries(kube_version: str | None = None) -> Path:
    """The directory holding every node binary for `kube_version`, built once (cached, locked)."""
    kube = versions.resolve_kubernetes_version(kube_version)
    require_available(kube)
    out = node_bin_dir(kube)
    if _complete(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / "build.lock")):
        if not _complete(out):
            _build_into(out, kube)
    return out


def _build_into(out: Path, kube: str) -> None:
    started = time.monotonic()
    env = build.go_env(kube)
    log = out.parent / (out.name + ".build.log")
    log.write_text("")

    def go_build(
        title: str, module: Path, dest: Path, packages: list[str], ldflags: str, tags: str = ""
    ) -> None:
        run_step(
            title,
            [
                "go",
                "build",
                "-trimpath",
                *([f"-tags={tags}"] if tags else []),
                f"-ldflags={ldflags}",
                "-o",
                f"{dest}/",
                *packages,
            ],
            cwd=module,
            env=env,
            log=log,
            started=started,
        )

    with build.staged_output(out) as tmp, tempfile.TemporaryDirectory(prefix="lws-nodebuild-") as work:
        mods = build._copy_wrappers(Path(work))
        go_build(
            f"Building kubelet and kube-proxy {kube}",
            mods / "k8s" / versions.minor_of(kube),
            tmp,
            ["k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-proxy"],
            build._kube_ldflags(kube),
            tags="notest,grpcnotrace",
        )
        containerd = "github.com/containerd/containerd/v2"
        go_build(
            f"Building containerd {CONTAINERD_VERSION}",
            mods / "containerd",
            tmp,
            [f"{containerd}/cmd/{c}" for c in ("containerd", "containerd-shim-runc-v2", "ctr")],
            f"-s -w -X {containerd}/version.Version={CONTAINERD_VERSION}",
            # The snapshotters that need cgo or kernel modules this machine lacks; overlayfs is used.
            tags="no_btrfs,no_devmapper,no_zfs",
        )
        go_build(
            f"Building CNI plugins {CNI_PLUGINS_VERSION}",
            mods / "cni",
            tmp / "cni",
            [f"github.com/containernetworking/plugins/plugins/{_CNI_PACKAGES[p]}" for p in CNI_PLUGINS],
            "-s -w",
        )
        go_build(
            f"Building CoreDNS {COREDNS_VERSION}",
            mods / "coredns",
            tmp,
            ["./cmd/coredns"],
            "-s -w",
        )
        go_build("Building pause and probe", mods / "probe", tmp, ["./cmd/pause", "./cmd/probe"], "-s -w")
        _self_check(tmp, kube)
        build.publish(tmp, out, f"node binaries for {kube}\n")


def _self_check(bindir: Path, kube: str) -> None:
    expectations = {
        "kubelet": f"Kubernetes {kube}",
        "kube-proxy": f"Kubernetes {kube}",
        "containerd": CONTAINERD_VERSION,
        "coredns": COREDNS_VERSION.removeprefix("v"),
    }
    for binary, expected in expectations.items():
        flag = "-version" if binary == "coredns" else "--version"
        out = subprocess.run([str(bindir / binary), flag], capture_output=True, text=True, check=False)
        if expected not in out.stdout + out.stderr:
            raise build.BuildError(f"{binary} {flag} printed {out.stdout.strip()!r}; expected {expected!r}")


def missing_host_packages() -> list[str]:
    return [package for package, command in HOST_PACKAGES.items() if shutil.which(command) is None]


def ensure_host_packages() -> None:
    """Install runc, iptables and conntrack from Debian when absent (root only)."""
    missing = missing_host_packages()
    if not missing:
        return
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        capture_output=True,
        text=True,
        check=False,
        env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
    )
    if proc.returncode != 0:
        raise build.BuildError(
            f"real nodes need the Debian packages {', '.join(missing)}; `apt-get install` failed:\n"
            + proc.stderr[-2000:]
        )
