"""Decode and cache 10,000 synthetic pods three ways and print time and retained memory for each.

    uv run python benchmarks/runtime_decode.py [--pods 10000]

* projection: msgspec into runtime.projections.Pod (what the reflector caches for pods)
* dict:       msgspec into plain dicts (what the reflector caches for LWS/DS objects)
* lightkube:  lightkube's full typed Pod model (for reference; not used by the caches)

Each variant decodes one paginated list body (500 items a page, like the reflector), then upserts
every object into a Store with the owner-UID and two-label indexes the pod controller uses.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec
from lightkube.resources.core_v1 import Pod as LightkubePod

from leaderworkerset.runtime.codecs import DictCodec, StructCodec
from leaderworkerset.runtime.objects import MetaLike
from leaderworkerset.runtime.projections import POD_CODEC
from leaderworkerset.runtime.store import OWNER_UID_INDEX, Store, index_by_labels, index_by_owner_uid

SET = "leaderworkerset.sigs.k8s.io/name"
GROUP = "leaderworkerset.sigs.k8s.io/group-index"


def synthetic_pod(i: int) -> dict[str, Any]:
    """A realistic worker pod as the API server returns it (managedFields included)."""
    group, worker = divmod(i, 4)
    env = [{"name": f"LWS_VAR_{k}", "value": f"value-{k}"} for k in range(6)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"lws-{group}-{worker}",
            "namespace": "bench",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {
                SET: "lws",
                GROUP: str(group),
                "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                "leaderworkerset.sigs.k8s.io/group-key": f"{group:040x}",
                "leaderworkerset.sigs.k8s.io/template-revision-hash": "5d8f7c9b6",
                "apps.kubernetes.io/pod-index": str(worker),
                "statefulset.kubernetes.io/pod-name": f"lws-{group}-{worker}",
            },
            "annotations": {
                "leaderworkerset.sigs.k8s.io/size": "4",
                "leaderworkerset.sigs.k8s.io/leader-name": f"lws-{group}",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": f"lws-{group}",
                    "uid": f"11111111-0000-0000-0000-{group:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-11-29T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {f"f:l{k}": {} for k in range(8)}}},
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/nginx:1.27",
                    "env": env,
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "volumeMounts": [
                        {"name": "kube-api-access", "mountPath": "/var/run/secrets", "readOnly": True}
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{i % 100}",
            "hostname": f"lws-{group}-{worker}",
            "subdomain": "lws",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.0.{i // 250}.{i % 250}",
            "hostIP": "10.1.0.1",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-11-29T10:00:01Z"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": "worker",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "image": "registry.k8s.io/nginx:1.27",
                    "imageID": "sha256:abc",
                    "containerID": "containerd://abc",
                    "state": {"running": {"startedAt": "2026-11-29T10:00:01Z"}},
                }
            ],
        },
    }


def pages(count: int, page_size: int = 500) -> list[bytes]:
    pods = [synthetic_pod(i) for i in range(count)]
    return [
        msgspec.json.encode(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "9"},
                "items": pods[start : start + page_size],
            }
        )
        for start in range(0, count, page_size)
    ]


class LightkubeCodec:
    """lightkube's full model, decoded from each page's items."""

    def __init__(self) -> None:
        self._inner = StructCodec(LightkubePod)

    def decode_list(self, raw: bytes) -> Any:
        return self._inner.decode_list(raw)

    def decode_object(self, raw: bytes) -> Any:
        return self._inner.decode_object(raw)

    def meta(self, obj: Any) -> MetaLike:
        meta: MetaLike = obj.metadata
        return meta


def fill(codec: Any, bodies: list[bytes]) -> Store[Any]:
    store: Store[Any] = Store(
        codec, {OWNER_UID_INDEX: index_by_owner_uid, "set-group": index_by_labels(SET, GROUP)}
    )
    for body in bodies:
        for item in codec.decode_list(body).items or ():
            store.upsert(item)
    return store


def measure(codec: Any, bodies: list[bytes]) -> tuple[float, float, int]:
    """Best-of-3 wall time without tracing, then retained bytes of one more fill under tracemalloc."""
    timings = []
    for _ in range(3):
        gc.collect()
        started = time.perf_counter()
        store = fill(codec, bodies)
        timings.append(time.perf_counter() - started)
        del store
    gc.collect()
    tracemalloc.start()
    store = fill(codec, bodies)
    gc.collect()
    retained, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return min(timings), retained, len(store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    bodies = pages(args.pods)
    print(f"{args.pods} pods, {sum(map(len, bodies)) / 1e6:.1f} MB of JSON in {len(bodies)} pages")
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("projection", lambda: POD_CODEC),
        ("dict", DictCodec),
        ("lightkube", LightkubeCodec),
    ]
    print(f"{'variant':<12}{'total s':>10}{'µs/pod':>10}{'retained MB':>14}{'KiB/pod':>10}")
    for name, factory in variants:
        elapsed, retained, stored = measure(factory(), bodies)
        assert stored == args.pods
        print(f"{name:<12}{elapsed:>10.3f}{elapsed / stored * 1e6:>10.1f}{retained / 1e6:>14.1f}"
              f"{retained / stored / 1024:>10.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
