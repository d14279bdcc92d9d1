"""metrics-server on a local full cluster: the resource metrics API (`metrics.k8s.io`) that
kube-controller-manager's HPA controller reads, fed from kwok's simulated kubelets.

The chain is the one a real cluster has, with kwok in the kubelet's place:

* kwok (``ClusterOptions(kubelet_metrics=True)``) serves each fake node's ``/metrics/resource``
  over HTTPS on 127.0.0.1, at the port every Node reports in ``daemonEndpoints``, with CPU and
  memory per container from the pod's ``kwok.x-k8s.io/usage-cpu`` / ``usage-memory`` annotations
  (defaults 1m and 1Mi); CPU is a counter integrated over time, as a kubelet's is;
* metrics-server (built from ``sigs.k8s.io/metrics-server``, devcluster/tools.py) scrapes every
  node there (the Node's ``metrics.k8s.io/resource-metrics-path`` annotation names kwok's path),
  verifying kwok's certificate against the cluster CA, and serves ``metrics.k8s.io/v1beta1``;
* kube-apiserver aggregates that API through an APIService whose Service is an ExternalName for
  127.0.0.1 (nothing routes ClusterIPs here; kwokctl registers its metrics-server the same way),
  proxying with the front-proxy client certificate (devcluster/pki.py).

``kubectl top pods`` and the HPA controller then read real scrapes of simulated usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from leaderworkerset.devcluster import kube, tools
from leaderworkerset.devcluster.cluster import ClusterError, LocalCluster, free_port
from leaderworkerset.devcluster.processes import wait_for

API_SERVICE: Final = "v1beta1.metrics.k8s.io"
NAMESPACE: Final = "kube-system"
NAME: Final = "metrics-server"
# metrics-server's lowest resolution (it refuses less than 10s), so that an HPA sees a load change
# after one or two scrapes; the kubelet request timeout must stay below it.
RESOLUTION: Final = "10s"


def argv(binary: Path, cluster: LocalCluster, port: int) -> list[str]:
    kubeconfig = str(cluster.kubeconfig)
    return [
        str(binary),
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        # A self-signed serving certificate, written here at start.
        f"--cert-dir={cluster.workdir / 'metrics-server-certs'}",
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--kubelet-preferred-address-types=InternalIP",
        "--kubelet-use-node-status-port",
        f"--kubelet-certificate-authority={cluster.pki.ca_cert}",
        "--kubelet-request-timeout=5s",
        f"--metric-resolution={RESOLUTION}",
        "--v=1",
    ]


def registration(port: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Service and APIService that put metrics-server behind kube-apiserver."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"k8s-app": NAME}},
        "spec": {
            "type": "ExternalName",
            "externalName": "127.0.0.1",
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    }
    api_service = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE, "labels": {"k8s-app": NAME}},
        "spec": {
            "group": "metrics.k8s.io",
            "version": "v1beta1",
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "service": {"name": NAME, "namespace": NAMESPACE, "port": port},
            # metrics-server's certificate is self-signed and reached on loopback only; its own
            # manifest and kwokctl skip verification the same way.
            "insecureSkipTLSVerify": True,
        },
    }
    return service, api_service


def _available(client: kube.RestClient) -> bool:
    api_service = client.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{API_SERVICE}") or {}
    conditions = (api_service.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


def _every_node_measured(client: kube.RestClient) -> bool:
    nodes = {n["metadata"]["name"] for n in (client.get("/api/v1/nodes") or {}).get("items", [])}
    measured = client.get("/apis/metrics.k8s.io/v1beta1/nodes") or {}
    return bool(nodes) and nodes <= {m["metadata"]["name"] for m in measured.get("items", [])}


def start(cluster: LocalCluster, binary: Path | None = None, *, timeout: float = 120.0) -> None:
    """Run metrics-server with `cluster` (stopped with it), register its API, and return once
    `metrics.k8s.io` answers with a measurement of every node: the whole chain works."""
    if not cluster.options.kubelet_metrics:
        raise ClusterError(
            "metrics-server needs kwok's kubelet endpoints: ClusterOptions(kubelet_metrics=True)"
        )
    binary = binary or tools.ensure_tool(tools.METRICS_SERVER)
    port = free_port()
    cluster.state.ports[NAME] = port
    proc = cluster.attach(NAME, argv(binary, cluster, port))
    client = kube.RestClient.from_kubeconfig(cluster.kubeconfig)
    service, api_service = registration(port)
    client.create(f"/api/v1/namespaces/{NAMESPACE}/services", service)
    client.create("/apis/apiregistration.k8s.io/v1/apiservices", api_service)

    def dead() -> str | None:
        code = proc.poll()
        return None if code is None else f"metrics-server (exit code {code}): {cluster.log_tail(NAME, 20)}"

    try:
        wait_for(
            f"APIService {API_SERVICE} Available", lambda: _available(client), timeout=timeout, alive=dead
        )
        wait_for("metrics of every node", lambda: _every_node_measured(client), timeout=timeout, alive=dead)
    except TimeoutError as err:
        raise ClusterError(
            f"metrics-server did not serve metrics.k8s.io: {err}\n{cluster.log_tail(NAME)}"
        ) from err
