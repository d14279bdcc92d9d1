"""The probe workload of the real-node tests (devcluster/gomod/probe): pod specs whose readiness means
what LeaderWorkerSet promises: a leader is Ready only once every worker of its group has resolved
$LWS_LEADER_ADDRESS and connected to it; a worker only while connected."""

from __future__ import annotations

from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.devcluster.realnodes.addons import REAL_NODE_LABEL
from leaderworkerset.devcluster.realnodes.fleet import PROBE_IMAGE
from tests.support.builders.common import Obj

HTTP_PORT = 8080


def probe_pod_spec(
    image: str = PROBE_IMAGE, env: dict[str, str] | None = None, memory_limit: str | None = None
) -> Obj:
    """One probe container on the real nodes, the pods of a group spread over them."""
    resources: dict[str, Any] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    if memory_limit:
        resources["limits"] = {"memory": memory_limit}
    return {
        "nodeSelector": {REAL_NODE_LABEL: "true"},
        # The pods of a group spread over the nodes, one per node while there are enough (they share
        # the group key).
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": c.LABEL_SET_NAME, "operator": "Exists"}]},
                "matchLabelKeys": [c.LABEL_GROUP_KEY],
            }
        ],
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "probe",
                "image": image,
                "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                "ports": [{"containerPort": HTTP_PORT}, {"containerPort": 7070}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": HTTP_PORT}, "periodSeconds": 1},
                "resources": resources,
            }
        ],
    }
