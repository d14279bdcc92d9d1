"""In the apiserver shape nothing but our controllers runs: these helpers play the StatefulSet
controller, the kubelet and the pod webhook, as upstream's envtest integration tests do.

* `create_leader_pods` is the leader StatefulSet creating `<lws>-<i>` (hostname/subdomain set) with
  the labels the pod webhook would add (group index, group key);
* `create_worker_pods` is a worker StatefulSet creating `<leader>-<j>`;
* `create_hash_leader` is the leader Deployment's ReplicaSet and the pod webhook making a gated
  Hash leader (or one already bound to a node);
* `set_pod_ready`, `set_group_ready`, `set_statefulset_ready` are the kubelet and the StatefulSet
  controller reporting status;
* `restart_container` is a container crash (restartCount bumped).

Everything goes through the API server, so the controllers see it through their watches.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import secrets
from typing import Any

from leaderworkerset.api import constants as c
from leaderworkerset.core.groups.keys import group_key, hash_group_key, hash_leader_hostname
from leaderworkerset.core.rollout.revision import hash_patch, revision_patch
from leaderworkerset.runtime.client import KubeClient
from leaderworkerset.runtime.errors import is_conflict
from leaderworkerset.runtime.resources import DEPLOYMENTS, LEADERWORKERSETS, PODS, STATEFULSETS, ResourceRef
from tests.support.wait import eventually

Obj = dict[str, Any]


def current_revision_key(lws: Obj) -> str:
    """The revision key the controller computes for the LWS as it is now."""
    return hash_patch(revision_patch(lws))


def owner_reference(obj: Obj, api_version: str, kind: str) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def leader_pod(lws: Obj, leader_sts: Obj, index: int, revision_key: str) -> Obj:
    """The pod the leader StatefulSet creates for ordinal `index`, as the pod webhook leaves it."""
    meta = lws["metadata"]
    name, namespace = f"{meta['name']}-{index}", meta["namespace"]
    lwt = lws["spec"]["leaderWorkerTemplate"]
    template = lwt.get("leaderTemplate") or lwt["workerTemplate"]
    annotations = {c.ANNOTATION_SIZE: str(lwt.get("size", 1))}
    topology = (meta.get("annotations") or {}).get(c.ANNOTATION_EXCLUSIVE_TOPOLOGY)
    if topology:
        annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY] = topology
    template_annotations = ((leader_sts["spec"].get("template") or {}).get("metadata") or {}).get(
        "annotations"
    ) or {}
    if c.ANNOTATION_POD_TERMINATION_POLICY in template_annotations:
        annotations[c.ANNOTATION_POD_TERMINATION_POLICY] = template_annotations[
            c.ANNOTATION_POD_TERMINATION_POLICY
        ]
    spec = copy.deepcopy(template.get("spec") or {})
    spec["hostname"] = name
    spec["subdomain"] = leader_sts["spec"].get("serviceName") or meta["name"]
    if (lws["spec"].get("networkConfig") or {}).get("subdomainPolicy") == c.SUBDOMAIN_UNIQUE_PER_REPLICA:
        spec["subdomain"] = name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                c.LABEL_SET_NAME: meta["name"],
                c.LABEL_WORKER_INDEX: c.LEADER_WORKER_INDEX,
                c.LABEL_GROUP_INDEX: str(index),
                c.LABEL_GROUP_KEY: group_key(namespace, name),
                c.LABEL_TEMPLATE_REVISION_HASH: revision_key,
            },
            "annotations": annotations,
            "ownerReferences": [owner_reference(leader_sts, "apps/v1", "StatefulSet")],
        },
        "spec": spec,
    }


async def get_lws(api: KubeClient, namespace: str, name: str = "test-sample") -> Obj:
    return await api.get(LEADERWORKERSETS, namespace, name)


async def leader_statefulset(api: KubeClient, namespace: str, name: str = "test-sample") -> Obj:
    return await _once_made(api, STATEFULSETS, namespace, name)


async def worker_statefulset(api: KubeClient, namespace: str, leader_name: str) -> Obj:
    """The group's worker StatefulSet once the pod controller has made it (named after its leader)."""
    return await _once_made(api, STATEFULSETS, namespace, leader_name)


async def _once_made(api: KubeClient, ref: ResourceRef, namespace: str, name: str) -> Obj:
    """The object once the controller has made it."""

    async def fetch() -> Obj:
        try:
            return await api.get(ref, namespace, name)
        except Exception as err:
            raise AssertionError(f"{ref.kind} {name}: {err}") from err

    return await eventually(fetch)


async def create_leader_pods(
    api: KubeClient,
    lws: Obj,
    start: int,
    end: int,
    *,
    revision_key: str | None = None,
    node_name: str | None = None,
) -> list[Obj]:
    """Leader pods for ordinals [start, end) at `revision_key` (default: the LWS's current one),
    bound to `node_name` when given (the scheduler's part)."""
    meta = lws["metadata"]
    sts = await leader_statefulset(api, meta["namespace"], meta["name"])
    key = revision_key if revision_key is not None else current_revision_key(lws)
    created = []
    for i in range(start, end):
        pod = leader_pod(lws, sts, i, key)
        if node_name:
            pod["spec"]["nodeName"] = node_name
        created.append(await api.create(PODS, pod))
    return created


async def create_worker_pods(
    api: KubeClient, lws: Obj, leader: Obj, *, node_name: str | None = None, owner: Obj | None = None
) -> list[Obj]:
    """Worker pods `<leader>-1..size-1`, controlled by the leader pod (as upstream's helper) or by
    the ownerReference `owner`.

    `node_name` schedules them: deleting a scheduled pod is graceful (it stays terminating, as on
    a real node), while an unscheduled pod disappears at once.
    """
    lwt = lws["spec"]["leaderWorkerTemplate"]
    size = int(lwt.get("size", 1))
    leader_meta = leader["metadata"]
    created = []
    for j in range(1, size):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{leader_meta['name']}-{j}",
                "namespace": leader_meta["namespace"],
                "labels": {
                    c.LABEL_SET_NAME: lws["metadata"]["name"],
                    "worker.pod": "workers",
                    c.LABEL_WORKER_INDEX: str(j),
                    c.LABEL_TEMPLATE_REVISION_HASH: leader_meta["labels"][c.LABEL_TEMPLATE_REVISION_HASH],
                    c.LABEL_GROUP_INDEX: leader_meta["labels"][c.LABEL_GROUP_INDEX],
                },
                "annotations": {c.ANNOTATION_SIZE: str(size)},
                "ownerReferences": [owner or owner_reference(leader, "v1", "Pod")],
            },
            "spec": copy.deepcopy(lwt["workerTemplate"]["spec"]),
        }
        if node_name:
            pod["spec"]["nodeName"] = node_name
        created.append(await api.create(PODS, pod))
    return created


async def set_pod_phase(api: KubeClient, namespace: str, name: str, phase: str) -> None:
    await api.patch_status(PODS, namespace, name, {"status": {"phase": phase}})


async def set_pod_ready(api: KubeClient, namespace: str, name: str) -> None:
    """Kubelet: the pod runs and passes its readiness probe."""
    await api.patch_status(
        PODS,
        namespace,
        name,
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
    )


async def restart_container(api: KubeClient, namespace: str, name: str, *, phase: str = "Running") -> None:
    """Kubelet: the pod's first container restarted once."""
    pod = await api.get(PODS, namespace, name)
    first = {"ready": False, "restartCount": 1}
    status = {"phase": phase, "containerStatuses": _container_statuses(pod, first)}
    await api.patch_status(PODS, namespace, name, {"status": status})


def _container_statuses(pod: dict[str, Any], first: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container's status as a kubelet reports it: the spec's image (kwok's in-place image
    stage re-renders a running pod whose reported images differ from its spec, which would undo
    the change), the other containers as they were, the first one with `first` applied."""
    previous = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    statuses = []
    for index, container in enumerate(pod["spec"]["containers"]):
        name = container["name"]
        running = {"ready": True, "restartCount": 0, "state": {"running": {"startedAt": _now()}}}
        status = {"name": name, "imageID": "", **(previous.get(name) or running), "image": container["image"]}
        statuses.append({**status, **first} if index == 0 else status)
    return statuses


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def crash_container(
    api: KubeClient, namespace: str, name: str, *, exit_code: int, reason: str = "Error"
) -> None:
    """Kubelet: the pod's first container exited with `exit_code` and was restarted (lastState)."""
    pod = await api.get(PODS, namespace, name)
    container = pod["spec"]["containers"][0]["name"]
    previous = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
    restarts = int((previous.get(container) or {}).get("restartCount") or 0) + 1
    now = _now()
    terminated = {"exitCode": exit_code, "reason": reason, "startedAt": now, "finishedAt": now}
    first = {
        "ready": False, "restartCount": restarts,
        "state": {"running": {"startedAt": now}}, "lastState": {"terminated": terminated},
    }  # fmt: skip
    status = {"phase": "Running", "containerStatuses": _container_statuses(pod, first)}
    await api.patch_status(PODS, namespace, name, {"status": status})


async def crash_loop(api: KubeClient, namespace: str, name: str, *, exit_code: int, restarts: int) -> None:
    """Kubelet: the pod's first container exited with `exit_code` `restarts` times and waits out its
    back-off (CrashLoopBackOff); every container reported by its name and spec image."""
    pod = await api.get(PODS, namespace, name)
    first = {
        "ready": False, "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
        "lastState": {"terminated": {"exitCode": exit_code, "reason": "Error"}},
    }  # fmt: skip
    status = {"phase": "Running", "containerStatuses": _container_statuses(pod, first)}
    await api.patch_status(PODS, namespace, name, {"status": status})


async def set_pod_started_and_ready(api: KubeClient, namespace: str, name: str) -> None:
    """Kubelet: bound, every container running (its spec image) and ready, the pod Ready — each
    with its timestamp (time to ready). Restart counts stay as they were: a kubelet never lowers one."""
    pod = await api.get(PODS, namespace, name)
    now = _now()
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": now}
        for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    ]
    running = {"ready": True, "state": {"running": {"startedAt": now}}}
    statuses = [{**status, **running} for status in _container_statuses(pod, {})]
    status = {"phase": "Running", "conditions": conditions, "containerStatuses": statuses}
    await api.patch_status(PODS, namespace, name, {"status": status})


async def set_statefulset_ready(api: KubeClient, namespace: str, name: str) -> None:
    """StatefulSet controller: every replica available, no rolling of its own template."""
    sts = await api.get(STATEFULSETS, namespace, name)
    replicas = int(sts["spec"].get("replicas", 1))
    status = {
        "replicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "currentRevision": "",
        "updateRevision": "",
    }
    await api.patch_status(STATEFULSETS, namespace, name, {"status": status})


async def set_leader_pod_ready(api: KubeClient, namespace: str, name: str, lws_name: str) -> None:
    """Upstream's SetLeaderPodToReady: the leader StatefulSet re-created this leader at its current
    revision (relabel; the group's old worker StatefulSet goes with the old pod), and it is ready."""
    leader_sts = await api.get(STATEFULSETS, namespace, lws_name)
    key = leader_sts["metadata"]["labels"][c.LABEL_TEMPLATE_REVISION_HASH]
    await api.merge_patch(
        PODS, namespace, name, {"metadata": {"labels": {c.LABEL_TEMPLATE_REVISION_HASH: key}}}
    )
    with contextlib.suppress(Exception):
        await api.delete(STATEFULSETS, namespace, name)
    await set_pod_ready(api, namespace, name)


async def set_group_ready(api: KubeClient, namespace: str, name: str, lws_name: str = "test-sample") -> None:
    """Upstream's SetPodGroupToReady: the leader as above, then its (re-created) worker StatefulSet
    reports every replica available."""
    await set_leader_pod_ready(api, namespace, name, lws_name)

    async def worker_sts_ready() -> bool:
        try:
            await set_statefulset_ready(api, namespace, name)
        except Exception as err:
            raise AssertionError(f"worker statefulset {name}: {err}") from err
        return True

    await eventually(worker_sts_ready)


async def set_groups_ready(
    api: KubeClient, namespace: str, groups: int, lws_name: str = "test-sample"
) -> None:
    """Upstream's SetSuperPodToReady: wait for `groups` worker StatefulSets, make every group ready."""

    async def worker_statefulsets() -> list[str]:
        items = await api.list(STATEFULSETS, namespace, label_selector=f"{c.LABEL_SET_NAME}={lws_name}")
        names = [s["metadata"]["name"] for s in items if s["metadata"]["name"] != lws_name]
        if len(names) != groups:
            raise AssertionError(f"{len(names)} worker statefulsets, want {groups}")
        return names

    for name in await eventually(worker_statefulsets):
        await set_group_ready(api, namespace, name, lws_name)


async def set_leaders_ready(
    api: KubeClient, namespace: str, start: int, end: int, lws_name: str = "test-sample"
) -> None:
    """Upstream's SetLeaderPodsToReady (size-1 groups): leaders ready, leader StatefulSet ready."""
    for i in range(start, end):
        await set_leader_pod_ready(api, namespace, f"{lws_name}-{i}", lws_name)
    await set_statefulset_ready(api, namespace, lws_name)


async def delete_groups(
    api: KubeClient, namespace: str, start: int, end: int, lws_name: str = "test-sample"
) -> None:
    """Upstream's DeleteLeaderPod: the StatefulSet controller removing leaders [start, end) and the
    garbage collector their worker StatefulSets."""
    for i in range(start, end):
        await api.delete(PODS, namespace, f"{lws_name}-{i}")
        with contextlib.suppress(Exception):
            await api.delete(STATEFULSETS, namespace, f"{lws_name}-{i}")


async def delete_groups_above_replicas(
    api: KubeClient, namespace: str, lws_name: str = "test-sample"
) -> None:
    """Upstream's DeleteLeaderPods: every group whose index is >= spec.replicas."""
    lws = await api.get(LEADERWORKERSETS, namespace, lws_name)
    leaders = await api.list(PODS, namespace, label_selector=f"{c.LABEL_WORKER_INDEX}=0")
    replicas = int(lws["spec"]["replicas"])
    for pod in leaders:
        index = int(pod["metadata"]["labels"][c.LABEL_GROUP_INDEX])
        if index >= replicas:
            await delete_groups(api, namespace, index, index + 1, lws_name)


async def finish_group_deletion(
    api: KubeClient, namespace: str, group: int, lws_name: str = "test-sample"
) -> None:
    """Garbage collector and kubelet: a deleted group's objects go away (foreground finalizer
    cleared, pods removed, the worker StatefulSet removed)."""
    selector = f"{c.LABEL_SET_NAME}={lws_name},{c.LABEL_GROUP_INDEX}={group}"
    for pod in await api.list(PODS, namespace, label_selector=selector):
        name = pod["metadata"]["name"]
        with contextlib.suppress(Exception):
            await api.merge_patch(PODS, namespace, name, {"metadata": {"finalizers": None}})
        with contextlib.suppress(Exception):
            await api.delete(PODS, namespace, name, grace_period_seconds=0)
    with contextlib.suppress(Exception):
        await api.delete(STATEFULSETS, namespace, f"{lws_name}-{group}")

    async def gone() -> bool:
        return not await api.list(PODS, namespace, label_selector=selector)

    await eventually(gone)


async def update_lws(api: KubeClient, namespace: str, name: str, change: Any) -> Obj:
    """Read-modify-write the LWS spec with `change(lws)`, retrying conflicts."""

    async def attempt() -> Obj:
        lws = await api.get(LEADERWORKERSETS, namespace, name)
        change(lws)
        try:
            return await api.update(LEADERWORKERSETS, lws)
        except Exception as err:
            if is_conflict(err):
                raise AssertionError("conflict") from err
            raise

    return await eventually(attempt)


async def leader_deployment(api: KubeClient, ns: str, name: str) -> Obj:
    """The Hash set's leader Deployment, once the LWS controller has made it."""
    return await _once_made(api, DEPLOYMENTS, ns, name)


async def create_hash_leader(api: KubeClient, ns: str, name: str, *, node: str | None = None) -> Obj:
    """What the ReplicaSet controller and the pod webhook make of the Deployment's template."""
    deploy = await leader_deployment(api, ns, name)
    template = copy.deepcopy(deploy["spec"]["template"])
    key = hash_group_key(ns, secrets.token_hex(8))
    labels = {**template["metadata"]["labels"], c.LABEL_GROUP_INDEX: key, c.LABEL_GROUP_KEY: key}
    annotations = {
        **template["metadata"]["annotations"],
        c.ANNOTATION_POD_DELETION_COST: c.POD_DELETION_COST_WAITING_LEADER,
    }
    spec = template["spec"]
    spec["hostname"] = hash_leader_hostname(name, key)
    if annotations.get(c.ANNOTATION_SUBDOMAIN_POLICY) == c.SUBDOMAIN_UNIQUE_PER_REPLICA:
        spec["subdomain"] = spec["hostname"]  # the webhook's UniquePerReplica rule
    spec["schedulingGates"] = [{"name": c.SCHEDULING_GATE_GROUP_REPLACEMENT}]
    if node:
        spec["nodeName"] = node
        spec.pop("schedulingGates")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{secrets.token_hex(4)}",
            "namespace": ns,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }
    return await api.create(PODS, pod)


async def bind_pod(api: KubeClient, ns: str, name: str, node: str) -> None:
    """The scheduler's binding of an (ungated) pod to a node."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }
    await api.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=body)
