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
        # The aggregation layer, as kubeadm configures it: kube-apiserver proxies aggregated APIs
        # (metrics.k8s.io from metrics-server) with the front-proxy client certificate, and the
        # extension server trusts the user it names only from that CA and that name.
        f"--requestheader-client-ca-file={pki.front_proxy_ca_cert}",
        f"--requestheader-allowed-names={pki_mod.FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki.front_proxy_client_cert}",
        f"--proxy-client-key-file={pki.front_proxy_client_key}",
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


def kwok_argv(
    bindir: Path,
    kubeconfig: Path,
    stages: Path,
    *,
    kubelet_port: int = 0,
    pki: pki_mod.ClusterPKI | None = None,
    real_nodes: bool = False,
) -> list[str]:
    """kwok's command line; with `kubelet_port` (and the PKI) it also serves every fake node's kubelet
    endpoints over HTTPS on 127.0.0.1:`kubelet_port`, the port and address each Node reports."""
    # Beside real nodes kwok must keep to its own fake ones (nodes.py annotates them), or it would
    # report status for the kubelets' pods too.
    manage = (
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"
        if real_nodes
        else "--manage-all-nodes=true"
    )
    args = [
        str(bindir / "kwok"),
        f"--kubeconfig={kubeconfig}",
        f"--config={stages}",
        manage,
        f"--cidr={POD_CIDR}",
        "--node-lease-duration-seconds=40",
    ]
    if kubelet_port:
        if pki is None:
            raise ValueError("serving kubelet endpoints needs the cluster's PKI")
        args += [
            "--node-ip=127.0.0.1",
            f"--node-port={kubelet_port}",
            f"--server-address=127.0.0.1:{kubelet_port}",
            f"--tls-cert-file={pki.kubelet_cert}",
            f"--tls-private-key-file={pki.kubelet_key}",
        ]
    return args


# The kubelet's resource metrics endpoint, as kwok simulates it: the families metrics-server reads
# from /metrics/resource (its scraper/client/resource decoder), per node at the path that each
# Node's `metrics.k8s.io/resource-metrics-path` annotation names (NodeSpec.manifest). CPU counters
# integrate the usage that RESOURCE_USAGE gives over time.
def _metric(name: str, dimension: str, kind: str, value: str, labels: Sequence[str] = ()) -> dict[str, Any]:
    sources = {
        "container": "container.name",
        "namespace": "pod.metadata.namespace",
        "pod": "pod.metadata.name",
    }
    metric: dict[str, Any] = {
        "name": name,
        "dimension": dimension,
        "kind": kind,
        "help": name,
        "value": value,
    }
    if labels:
        metric["labels"] = [{"name": label, "value": sources[label]} for label in labels]
    return metric


KUBELET_RESOURCE_METRICS: dict[str, Any] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Metric",
    "metadata": {"name": "kubelet-resource-metrics"},
    "spec": {
        "path": "/metrics/nodes/{nodeName}/metrics/resource",
        "metrics": [
            _metric("scrape_error", "node", "gauge", "0"),
            # A node's own system usage (1m CPU, 256Mi) on top of its pods': metrics-server drops a
            # node whose CPU counter or memory is zero, as an idle kwok node's would be.
            _metric(
                "node_cpu_usage_seconds_total",
                "node",
                "counter",
                'node.CumulativeUsage("cpu")'
                " + (Now().UnixSecond() - node.metadata.creationTimestamp.UnixSecond()) * 0.001",
            ),
            _metric("node_memory_working_set_bytes", "node", "gauge", 'node.Usage("memory") + 268435456.0'),
            _metric(
                "container_start_time_seconds",
                "container",
                "gauge",
                "pod.metadata.creationTimestamp.UnixSecond()",
                ("container", "namespace", "pod"),
            ),
            _metric(
                "container_cpu_usage_seconds_total",
                "container",
                "counter",
                'pod.CumulativeUsage("cpu", container.name)',
                ("container", "namespace", "pod"),
            ),
            _metric(
                "container_memory_working_set_bytes",
                "container",
                "gauge",
                'pod.Usage("memory", container.name)',
                ("container", "namespace", "pod"),
            ),
        ],
    },
}

# What each container uses: the pod's USAGE_CPU_ANNOTATION / USAGE_MEMORY_ANNOTATION (a quantity per
# container), else 1m CPU and 1Mi memory. A test or a demo puts load on a pod by annotating it.
USAGE_CPU_ANNOTATION = "kwok.x-k8s.io/usage-cpu"
USAGE_MEMORY_ANNOTATION = "kwok.x-k8s.io/usage-memory"


def _usage(annotation: str, default: str) -> str:
    return (
        f'"{annotation}" in pod.metadata.annotations ? '
        f'Quantity(pod.metadata.annotations["{annotation}"]) : Quantity("{default}")'
    )


RESOURCE_USAGE: dict[str, Any] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "ClusterResourceUsage",
    "metadata": {"name": "usage-from-annotations"},
    "spec": {
        "usages": [
            {
                "usage": {
                    "cpu": {"expression": _usage(USAGE_CPU_ANNOTATION, "1m")},
                    "memory": {"expression": _usage(USAGE_MEMORY_ANNOTATION, "1Mi")},
                }
            }
        ]
    },
}


# The kubelet's side of an in-place image update: a running pod whose containers'
# images changed reports the new images on running, ready containers, as the kubelet does once it
# restarted them. (kwok's own stages only ever render a pod's status while it is Pending.)
POD_CONTAINER_IMAGE: dict[str, Any] = {
    "apiVersion": "kwok.x-k8s.io/v1alpha1",
    "kind": "Stage",
    "metadata": {"name": "pod-container-image"},
    "spec": {
        "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
        "selector": {
            "matchExpressions": [
                {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
                {"key": ".status.phase", "operator": "In", "values": ["Running"]},
                {
                    "key": "[.spec.containers[].image] == [.status.containerStatuses[]?.image]",
                    "operator": "In",
                    "values": ["false"],
                },
            ]
        },
        "next": {
            "statusTemplate": (
                "{{ $now := Now }}\n"
                "containerStatuses:\n"
                "{{ range .spec.containers }}\n"
                "- image: {{ .image | Quote }}\n"
                "  name: {{ .name | Quote }}\n"
                "  ready: true\n"
                "  restartCount: 0\n"
                "  state:\n"
                "    running:\n"
                "      startedAt: {{ $now | Quote }}\n"
                "{{ end }}\n"
            )
        },
    },
}


def kwok_stage_config(stage_dir: Path, pod_ready_delay_ms: int, *, kubelet_metrics: bool = False) -> str:
    """The stage file for kwok: its fast node/pod lifecycle, with an optional pod-ready delay, and
    with `kubelet_metrics` the simulated resource metrics endpoint and usage.

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
    docs.append(POD_CONTAINER_IMAGE)
    if kubelet_metrics:
        docs += [KUBELET_RESOURCE_METRICS, RESOURCE_USAGE]
    return yaml.safe_dump_all(docs, sort_keys=False)
