"""What a cluster with `kubelet_metrics` tells kwok and registers for metrics-server (the chain runs in
tests/e2e/ecosystem/test_autoscaling.py): kwok serves every node's kubelet endpoints on the port and
address the Nodes report, with a certificate of the cluster CA; its configuration gains the resource
metrics and the usage only when asked; the APIService names metrics-server's port."""

from __future__ import annotations

from pathlib import Path

import yaml

from leaderworkerset.devcluster import components, metrics, pki
from leaderworkerset.devcluster.nodes import RESOURCE_METRICS_PATH, NodeSpec

STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml")
STAGES += ("pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml")


def stage_dir(tmp_path: Path) -> Path:
    for rel in STAGES:
        path = tmp_path / "stages" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"kind": "Stage", "metadata": {"name": Path(rel).stem}, "spec": {}}))
    return tmp_path / "stages"


def test_kwok_serves_kubelet_endpoints_only_when_asked(tmp_path: Path) -> None:
    cluster_pki = pki.generate(tmp_path / "pki")
    plain = components.kwok_argv(tmp_path, tmp_path / "kc", tmp_path / "st")
    assert not [a for a in plain if a.startswith(("--node-port", "--node-ip", "--tls-"))]
    served = components.kwok_argv(
        tmp_path, tmp_path / "kc", tmp_path / "st", kubelet_port=4242, pki=cluster_pki
    )
    assert served[len(plain) :] == [
        "--node-ip=127.0.0.1",
        "--node-port=4242",
        "--server-address=127.0.0.1:4242",
        f"--tls-cert-file={cluster_pki.kubelet_cert}",
        f"--tls-private-key-file={cluster_pki.kubelet_key}",
    ]


def test_the_resource_metrics_join_kwoks_configuration_only_when_asked(tmp_path: Path) -> None:
    stages = stage_dir(tmp_path)
    kinds = [d["kind"] for d in yaml.safe_load_all(components.kwok_stage_config(stages, 0))]
    assert kinds == ["Stage"] * 5  # kwok's four pod/node stages and the in-place image update
    docs = list(yaml.safe_load_all(components.kwok_stage_config(stages, 0, kubelet_metrics=True)))
    assert [d["kind"] for d in docs] == ["Stage"] * 5 + ["Metric", "ClusterResourceUsage"]
    metric = docs[5]["spec"]
    assert metric["path"] == "/metrics/nodes/{nodeName}/metrics/resource"
    # The families metrics-server decodes from a kubelet's /metrics/resource.
    assert {m["name"] for m in metric["metrics"]} >= {
        "node_cpu_usage_seconds_total",
        "node_memory_working_set_bytes",
        "container_cpu_usage_seconds_total",
        "container_memory_working_set_bytes",
        "container_start_time_seconds",
    }
    usage = docs[6]["spec"]["usages"][0]["usage"]
    assert components.USAGE_CPU_ANNOTATION in usage["cpu"]["expression"]
    assert components.USAGE_MEMORY_ANNOTATION in usage["memory"]["expression"]


def test_nodes_name_the_path_where_kwok_serves_their_resource_metrics() -> None:
    annotations = NodeSpec(name="n-1", index=1).manifest()["metadata"]["annotations"]
    assert annotations[RESOURCE_METRICS_PATH] == "/metrics/nodes/n-1/metrics/resource"


def test_the_api_service_reaches_metrics_server_on_loopback() -> None:
    service, api_service = metrics.registration(4443)
    assert service["spec"] == {
        "type": "ExternalName",
        "externalName": "127.0.0.1",
        "ports": [{"name": "https", "port": 4443, "protocol": "TCP"}],
    }
    assert api_service["metadata"]["name"] == "v1beta1.metrics.k8s.io"
    assert api_service["spec"]["service"] == {
        "name": "metrics-server",
        "namespace": "kube-system",
        "port": 4443,
    }
