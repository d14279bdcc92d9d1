"""The command lines of the control-plane components a LocalCluster runs: pure functions of the
cluster's paths, ports, PKI and options, so that what each component is told is read in one place."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from leaderworkerset.devcluster import pki as pki_mod
from leaderworkerset.devcluster.realnodes import addresses

# ClusterIPs come from the test block the real nodes route (realnodes/addresses.py) on every cluster,
# so one PKI and one set of flags serve both. kwok's fake pods take addresses nothing routes.
SERVICE_CIDR = addresses.SERVICE_NETWORK
POD_CIDR = "10.64.0.0/10"


def admin_kubeconfig(name: str, server: str, pki: pki_mod.ClusterPKI) -> dict[str, Any]:
    """The cluster's admin kubeconfig, every credential inline (the file works from any directory)."""

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    admin = {"client-certificate-data": b64(pki.admin_cert), "client-key-data": b64(pki.admin_key)}
    authority = {"server": server, "certificate-authority-data": b64(pki.ca_cert)}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": authority}],
        "users": [{"name": "admin", "user": admin}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }


def etcd_argv(bindir: Path, workdir: Path, port: int, peer: int) -> list[str]:
    return [
        str(bindir / "etcd"),
        "--name=lws-local",
        f"--data-dir={workdir / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{port}",
        f"--advertise-client-urls=http://127.0.0.1:{port}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=lws-local=http://127.0.0.1:{peer}",
        # Test data: durability is not worth an fsync per write.
        "--unsafe-no-fsync=true",
        "--auto-compaction-retention=1",
        "--log-level=warn",
    ]


def apiserver_argv(
    bindir: Path,
    ports: Mapping[str, int],
    pki: pki_mod.ClusterPKI,
    *,
    envtest_like: bool,
    feature_gates: str,
    runtime_config: str,
    extra_args: Sequence[str],
    real_nodes: bool = False,
) -> list[str]:
    if real_nodes:
        # Pods reach the API server through the `kubernetes` Service, whose endpoint is this address
        # on the nodes' bridge; the API server reaches webhook pods (and kubelets, for logs and exec)
        # directly at their addresses, which the host routes, rather than through a ClusterIP that
        # exists only in the nodes' kube-proxy rules.
        address = [
            f"--bind-address={addresses.HOST_ADDRESS}",
            f"--advertise-address={addresses.HOST_ADDRESS}",
            "--enable-aggregator-routing=true",
            f"--kubelet-client-certificate={pki.admin_cert}",
            f"--kubelet-client-key={pki.admin_key}",
            "--kubelet-preferred-address-types=InternalIP",
        ]
    else:
        address = [
            "--bind-address=127.0.0.1",
            # No default route in a sandbox: name the advertise address explicitly.
            "--advertise-address=127.0.0.1",
            # A loopback advertise address is not a valid endpoint for the `kubernetes`
            # Service; nothing in-cluster needs it (our controllers use the kubeconfig).
            "--endpoint-reconciler-type=none",
        ]
    args = [
        str(bindir / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
        *address,
        f"--secure-port={ports['kube-apiserver']}",
        f"--tls-cert-file={pki.server_cert}",
        f"--tls-private-key-file={pki.server_key}",
        f"--client-ca-file={pki.ca_cert}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--default-not-ready-toleration-seconds=15",
        "--default-unreachable-toleration-seconds=15",
        "--profiling=false",
        "--v=1",
    ]
    if envtest_like:
        # Without a controller-manager nobody creates the `default` ServiceAccount,
        # so its admission plugin would reject every pod (envtest does the same).
        args.append("--disable-admission-plugins=ServiceAccount")
    if feature_gates:
        args.append(f"--feature-gates={feature_gates}")
    if runtime_config:
        args.append(f"--runtime-config={runtime_config}")
    args.extend(extra_args)
    return args


def controller_manager_argv(
    bindir: Path, kubeconfig: Path, ports: Mapping[str, int], pki: pki_mod.ClusterPKI, feature_gates: str
) -> list[str]:
    kc = str(kubeconfig)
    args = [
        str(bindir / "kube-controller-manager"),
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports['kube-controller-manager']}",
        "--leader-elect=false",
        f"--service-account-private-key-file={pki.sa_key}",
        f"--root-ca-file={pki.ca_cert}",
        f"--cluster-signing-cert-file={pki.ca_cert}",
        f"--cluster-signing-key-file={pki.ca_key}",
        "--controllers=*",
        "--node-monitor-period=5s",
        "--node-monitor-grace-period=40s",
        # Defaults (20 qps) make a few hundred pods crawl; tests create thousands.
        "--kube-api-qps=300",
        "--kube-api-burst=600",
        "--concurrent-statefulset-syncs=10",
        "--concurrent-deployment-syncs=10",
        "--concurrent-replicaset-syncs=10",
        "--concurrent-gc-syncs=30",
        "--v=1",
    ]
    if feature_gates:
        args.append(f"--feature-gates={feature_gates}")
    return args


def scheduler_config(kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 300, "burst": 600},
        "leaderElection": {"leaderElect": False},
    }


def scheduler_argv(
    bindir: Path, config_path: Path, kubeconfig: Path, ports: Mapping[str, int], feature_gates: str
) -> list[str]:
    kc = str(kubeconfig)
    args = [
        str(bindir / "kube-scheduler"),
        f"--config={config_path}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports['kube-scheduler']}",
        "--v=1",
    ]
    if feature_gates:
        args.append(f"--feature-gates={feature_gates}")
    return args


def kwok_argv(bindir: Path, kubeconfig: Path, stages: Path, real_nodes: bool = False) -> list[str]:
    # Beside real nodes kwok must keep to its own fake ones (nodes.py annotates them), or it would
    # report status for the kubelets' pods too.
    manage = (
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"
        if real_nodes
        else "--manage-all-nodes=true"
    )
    return [
        str(bindir / "kwok"),
        f"--kubeconfig={kubeconfig}",
        f"--config={stages}",
        manage,
        f"--cidr={POD_CIDR}",
        "--node-lease-duration-seconds=40",
    ]


def kwok_stage_config(stage_dir: Path, pod_ready_delay_ms: int) -> str:
    """The stage file for kwok: its fast node/pod lifecycle, with an optional pod-ready delay.

    kwok drops all default stages as soon as one is configured, so the set is
    listed here — without "pod-delete", whose by-name delete can hit a same-name
    replacement pod; the pod reaper confirms deletions by UID instead.
    """
    files = [
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
        "pod/fast/pod-complete.yaml",
    ]
    docs = []
    for rel in files:
        stage = yaml.safe_load((stage_dir / rel).read_text())
        if stage["metadata"]["name"] == "pod-ready" and pod_ready_delay_ms > 0:
            stage["spec"]["delay"] = {"durationMilliseconds": pod_ready_delay_ms}
        docs.append(stage)
    return yaml.safe_dump_all(docs, sort_keys=False)
