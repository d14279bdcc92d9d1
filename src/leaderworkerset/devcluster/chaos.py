"""Simulated kubelet events on the full cluster: what a node would report when
a container restarts or a pod fails. Pods on kwok nodes never run, so tests
that exercise failure handling ask for these on demand."""

from __future__ import annotations

import datetime
from typing import Any

from leaderworkerset.devcluster.kube import RestClient


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def restart_container(
    client: RestClient, namespace: str, pod: str, container: str | None = None
) -> dict[str, Any]:
    """Bump ``restartCount`` of one container (the first if not named), as a kubelet does after a crash."""
    current = client.get(_pod_path(namespace, pod))
    if current is None:
        raise LookupError(f"pod {namespace}/{pod} not found")
    statuses: list[dict[str, Any]] = current.get("status", {}).get("containerStatuses") or []
    if not statuses:
        raise LookupError(f"pod {namespace}/{pod} has no container statuses yet (not started)")
    target = container or statuses[0]["name"]
    now = _now()
    updated = []
    for status in statuses:
        status = dict(status)
        if status["name"] == target:
            status["restartCount"] = int(status.get("restartCount", 0)) + 1
            status["lastState"] = {
                "terminated": {"exitCode": 137, "reason": "Error", "startedAt": now, "finishedAt": now}
            }
            status["state"] = {"running": {"startedAt": now}}
        updated.append(status)
    return client.patch_status(_pod_path(namespace, pod), {"status": {"containerStatuses": updated}})


def fail_pod(client: RestClient, namespace: str, pod: str, exit_code: int = 1) -> dict[str, Any]:
    """Mark every container terminated and the pod ``Failed``, as after an unrecoverable crash."""
    current = client.get(_pod_path(namespace, pod))
    if current is None:
        raise LookupError(f"pod {namespace}/{pod} not found")
    now = _now()
    statuses = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "ready": False,
            "restartCount": 0,
            "state": {
                "terminated": {"exitCode": exit_code, "reason": "Error", "startedAt": now, "finishedAt": now}
            },
        }
        for c in current["spec"]["containers"]
    ]
    patch = {
        "status": {
            "phase": "Failed",
            "containerStatuses": statuses,
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": now},
                {
                    "type": "ContainersReady",
                    "status": "False",
                    "reason": "PodFailed",
                    "lastTransitionTime": now,
                },
            ],
        }
    }
    return client.patch_status(_pod_path(namespace, pod), patch)
