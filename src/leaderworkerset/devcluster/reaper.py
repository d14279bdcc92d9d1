"""The pod reaper: the part of a kubelet that confirms a pod's deletion.

On a real node the kubelet stops a terminating pod's containers and then
deletes the pod object for good. kwok's own "pod-delete" stage does that by
*name*, without a UID precondition; when the stage fires twice for one pod
(duplicate watch events), the second delete can remove a same-name pod that a
StatefulSet has just created in its place — a failure no real cluster has, and
one that makes group-restart tests see a worker die that never failed.

This process watches every pod and, for each one marked for deletion, deletes
it with grace period 0 and a precondition on that pod's UID, so a replacement
is never touched. It runs as one more component of the full cluster shape.
Pods bound to real nodes (names with --spare-node-prefix) are left to their
kubelets, which stop the containers first.

    python -m leaderworkerset.devcluster.reaper --kubeconfig PATH [--spare-node-prefix real-node-]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
from pathlib import Path
from typing import Any

from leaderworkerset.devcluster.kube import RestClient

PODS = "/api/v1/pods"


def finalise(client: RestClient, pod: dict[str, Any]) -> None:
    """Delete a terminating pod for good, only if it is still the same object (UID)."""
    meta = pod.get("metadata") or {}
    path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
    body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
    status, _ = client.request("DELETE", path, body)
    # 404: already gone; 409: a newer pod holds the name — both mean there is nothing to do.
    if status >= 400 and status not in (404, 409):
        print(f"reaper: deleting {path} failed with HTTP {status}", file=sys.stderr, flush=True)


def terminating(pod: dict[str, Any], spare_prefix: str = "") -> bool:
    """Marked for deletion, and not on a node whose kubelet is real."""
    node = (pod.get("spec") or {}).get("nodeName") or ""
    if spare_prefix and node.startswith(spare_prefix):
        return False
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def reap_forever(client: RestClient, spare_prefix: str = "") -> None:
    while True:
        try:
            listing = client.get(PODS) or {}
            for pod in listing.get("items") or []:
                if terminating(pod, spare_prefix):
                    finalise(client, pod)
            version = (listing.get("metadata") or {}).get("resourceVersion", "")
            for event in client.watch(PODS, version):
                if event.get("type") == "ERROR":
                    break  # e.g. 410 Gone: list again
                pod = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED") and terminating(pod, spare_prefix):
                    finalise(client, pod)
        except (OSError, urllib.error.URLError, json.JSONDecodeError) as err:
            print(f"reaper: {err}; retrying", file=sys.stderr, flush=True)
            time.sleep(0.5)  # back off before reconnecting to the API server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, type=Path)
    parser.add_argument(
        "--spare-node-prefix", default="", help="leave pods on nodes named so to their kubelets"
    )
    args = parser.parse_args(argv)
    reap_forever(RestClient.from_kubeconfig(args.kubeconfig, timeout=330.0), args.spare_node_prefix)


if __name__ == "__main__":
    main()
