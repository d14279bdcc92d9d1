"""Cluster DNS for the real nodes: CoreDNS as a real Deployment behind the `kube-dns` Service, as a
kubeadm or kind cluster runs it, from the image built here (images.py). It answers for
`cluster.local` only: nothing is forwarded, since nothing may leave the machine."""

from __future__ import annotations

from typing import Any, Final

from leaderworkerset.devcluster.realnodes import addresses

NAMESPACE: Final = "kube-system"
COREDNS_IMAGE_REPOSITORY: Final = "lws.local/coredns"
REAL_NODE_LABEL: Final = "node.lws.local/real"
COREFILE: Final = f""".:53 {{
    errors
    health :8080
    ready :8181
    kubernetes {addresses.CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
    loadbalance
}}
"""
_LABELS: Final = {"k8s-app": "kube-dns"}


def coredns_objects(image: str) -> list[dict[str, Any]]:
    """ServiceAccount, RBAC, Corefile, Deployment and Service, in apply order."""
    meta = {"name": "coredns", "namespace": NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:coredns",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": NAMESPACE}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {**meta, "labels": _LABELS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": _LABELS},
                "template": {
                    "metadata": {"labels": _LABELS},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "priorityClassName": "system-cluster-critical",
                        "nodeSelector": {REAL_NODE_LABEL: "true"},
                        # Port 53 as a non-root user: containerd opens unprivileged ports in every pod.
                        "securityContext": {"runAsUser": 65532, "runAsNonRoot": True},
                        "containers": [
                            {
                                "name": "coredns",
                                "image": image,
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                ],
                                "readinessProbe": {
                                    "httpGet": {"path": "/ready", "port": 8181},
                                    "periodSeconds": 2,
                                },
                                "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}},
                                "resources": {"limits": {"memory": "100Mi"}, "requests": {"cpu": "10m"}},
                                "securityContext": {
                                    "readOnlyRootFilesystem": True,
                                    "allowPrivilegeEscalation": False,
                                },
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns"}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": NAMESPACE, "labels": _LABELS},
            "spec": {
                "clusterIP": addresses.DNS_SERVICE_IP,
                "selector": _LABELS,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]
