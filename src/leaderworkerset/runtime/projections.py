"""msgspec projections of high-volume built-in kinds: only the fields the controllers read.

A projection decodes about 8x faster and keeps a fraction of the memory of the full object (numbers in
benchmarks/runtime_decode.py). Anything not declared here is dropped while decoding, so when a
controller starts reading a new field it must be added here first. Field names are the Kubernetes
JSON names, hence the N815 exemptions.

Cached pods share the parts that pods repeat (`share_pod_values`): a projection taken from a cache is
read-only, never to be changed in place (`msgspec.structs.replace` makes a changed copy).
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

import msgspec

from leaderworkerset.runtime.codecs import SharedValues, StructCodec
from leaderworkerset.runtime.objects import ObjectMeta

# ruff: noqa: N815


class Condition(msgspec.Struct, omit_defaults=True, gc=False):
    type: str = ""
    status: str = ""
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: str | None = None


class ContainerStateTerminated(msgspec.Struct, omit_defaults=True, gc=False):
    exitCode: int = 0
    reason: str | None = None


class ContainerState(msgspec.Struct, omit_defaults=True, gc=False):
    terminated: ContainerStateTerminated | None = None
    running: dict[str, str] | None = None
    waiting: dict[str, str] | None = None


class Resources(msgspec.Struct, omit_defaults=True, gc=False):
    """A container's resource lists (quantities as the API server writes them, strings)."""

    limits: dict[str, Any] | None = None
    requests: dict[str, Any] | None = None


class Toleration(msgspec.Struct, omit_defaults=True, gc=False):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    tolerationSeconds: int | None = None


class ContainerStatus(msgspec.Struct, omit_defaults=True, gc=False):
    name: str = ""
    ready: bool = False
    restartCount: int = 0
    started: bool | None = None
    state: ContainerState | None = None
    # The failure ledger names the exit code of the termination a restart follows.
    lastState: ContainerState | None = None
    # In-place updates: the image the container runs (has the update reached it?) and the resources
    # a kubelet that resizes in place reports.
    image: str | None = None
    resources: Resources | None = None


class SchedulingGate(msgspec.Struct, gc=False):
    name: str = ""


class ReadinessGate(msgspec.Struct, gc=False):
    conditionType: str = ""


class SchedulingGroup(msgspec.Struct, omit_defaults=True, gc=False):
    podGroupName: str | None = None


class ContainerHead(msgspec.Struct, omit_defaults=True, gc=False):
    """What the controllers read of a container: the worker StatefulSet's TPU settings ask whether
    the leader requests TPUs (core/desired/tpu.py); an in-place update compares and patches images
    and resources by container name (core/rollout/inplaceupdate/)."""

    name: str | None = None
    image: str | None = None
    restartPolicy: str | None = None  # a sidecar's `Always`
    resources: Resources | None = None


class PodSpec(msgspec.Struct, omit_defaults=True, gc=False):
    nodeName: str | None = None
    hostname: str | None = None
    subdomain: str | None = None
    nodeSelector: dict[str, str] | None = None
    schedulingGates: list[SchedulingGate] | None = None
    readinessGates: list[ReadinessGate] | None = None
    # The Workload API PodGroup the pod joins; PodGroup cleanup keeps groups that pods still name.
    schedulingGroup: SchedulingGroup | None = None
    # The leader's TPU requests, so a worker StatefulSet is built from the cached leader (issue
    # 14), and what an in-place update compares.
    containers: list[ContainerHead] | None = None
    initContainers: list[ContainerHead] | None = None
    # An in-place update adds the template's tolerations (the one spec list a pod lets grow).
    tolerations: list[Toleration] | None = None


class PodStatus(msgspec.Struct, omit_defaults=True, gc=False):
    phase: str | None = None
    reason: str | None = None
    message: str | None = None  # an eviction's words, for the failure ledger
    podIP: str | None = None
    hostIP: str | None = None
    conditions: list[Condition] | None = None
    containerStatuses: list[ContainerStatus] | None = None
    initContainerStatuses: list[ContainerStatus] | None = None


class Pod(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class RollingUpdate(msgspec.Struct, omit_defaults=True, gc=False):
    partition: int | None = None
    maxUnavailable: int | str | None = None
    maxSurge: int | str | None = None


class UpdateStrategy(msgspec.Struct, omit_defaults=True, gc=False):
    type: str | None = None
    rollingUpdate: RollingUpdate | None = None


class TemplateMeta(msgspec.Struct, omit_defaults=True, gc=False):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodTemplateHead(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: TemplateMeta = msgspec.field(default_factory=TemplateMeta)


class WorkloadSpec(msgspec.Struct, omit_defaults=True, gc=False):
    """The spec fields StatefulSets and Deployments share that the controllers read."""

    replicas: int | None = None
    serviceName: str | None = None
    podManagementPolicy: str | None = None
    updateStrategy: UpdateStrategy | None = None
    strategy: UpdateStrategy | None = None
    template: PodTemplateHead = msgspec.field(default_factory=PodTemplateHead)


class WorkloadStatus(msgspec.Struct, omit_defaults=True, gc=False):
    observedGeneration: int | None = None
    replicas: int = 0
    readyReplicas: int = 0
    availableReplicas: int = 0
    currentReplicas: int = 0
    updatedReplicas: int = 0
    currentRevision: str | None = None
    updateRevision: str | None = None
    conditions: list[Condition] | None = None


class StatefulSet(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class Deployment(msgspec.Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class MetadataOnly(msgspec.Struct, omit_defaults=True, gc=False):
    """For kinds where only existence, labels and owners matter (e.g. Services)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


# The pods of one template repeat their containers (names, images, resources) and tolerations, and
# most short strings (namespace, node, condition types, phases, one-second timestamps of a burst):
# the pod cache keeps one copy of each (5.36 KiB per cached pod without, see
# docs/benchmarks.md). Bounded tables: a stale entry costs at most `bound` values in all.
_CONTAINER_LISTS: SharedValues[list[ContainerHead]] = SharedValues(1024)
_TOLERATION_LISTS: SharedValues[list[Toleration]] = SharedValues(1024)
_RESOURCES: SharedValues[Resources] = SharedValues(1024)
_TIMES: SharedValues[str] = SharedValues(4096)
_RUNNING: SharedValues[dict[str, str]] = SharedValues(4096)
_KEY = msgspec.msgpack.Encoder()
V = TypeVar("V")


def _shared(table: SharedValues[V], value: V | None) -> V | None:
    """The shared copy of a list or struct: keyed by its encoding, which tells apart exactly what
    converts differently (`"1"`, `1` and `true`; the order of a map's keys)."""
    return table.get(_KEY.encode(value), value) if value else value


def _intern(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


def share_pod_values(pod: Pod) -> None:
    """Swap the parts of a decoded pod that other pods repeat for their shared copies (read-only,
    like every cached object): the pod reads and converts exactly as before. Runs on every pod
    the watch delivers, hence the local names."""
    intern, times = sys.intern, _TIMES.get
    spec, status, meta = pod.spec, pod.status, pod.metadata
    if meta.creationTimestamp is not None:
        meta.creationTimestamp = times(meta.creationTimestamp, meta.creationTimestamp)
    spec.containers = _shared(_CONTAINER_LISTS, spec.containers)
    spec.initContainers = _shared(_CONTAINER_LISTS, spec.initContainers)
    spec.tolerations = _shared(_TOLERATION_LISTS, spec.tolerations)
    spec.nodeName = _intern(spec.nodeName)
    spec.subdomain = _intern(spec.subdomain)
    status.phase = _intern(status.phase)
    status.hostIP = _intern(status.hostIP)
    for cond in status.conditions or ():
        cond.type = intern(cond.type)
        cond.status = intern(cond.status)
        if cond.lastTransitionTime is not None:
            cond.lastTransitionTime = times(cond.lastTransitionTime, cond.lastTransitionTime)
    for statuses in (status.containerStatuses, status.initContainerStatuses):
        for state in statuses or ():
            state.name = intern(state.name)
            state.image = _intern(state.image)
            state.resources = _shared(_RESOURCES, state.resources)
            now = state.state
            if now is not None and now.running:  # `{"startedAt": ...}`: one per start second
                now.running = _RUNNING.get(tuple(now.running.items()), now.running)


POD_CODEC = StructCodec(Pod, share_pod_values)
STATEFULSET_CODEC = StructCodec(StatefulSet)
DEPLOYMENT_CODEC = StructCodec(Deployment)
METADATA_CODEC = StructCodec(MetadataOnly)
