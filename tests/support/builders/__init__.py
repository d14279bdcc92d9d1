"""Fluent builders for test objects, shared by the unit, integration and e2e tests:
extend the builder, do not hand-write objects. One module per kind:

* `leaderworkerset`: `LeaderWorkerSetBuilder` and its starting points `cached_lws` and `lws`.
* `pod`: `leader_pod` (as the StatefulSet controller makes it) and `PodBuilder`/`pod`/`leader`/
  `worker` (as the webhooks receive it).
* `statefulset`: `leader_sts`, `worker_statefulset` and `StatefulSetBuilder`.
* `disaggregatedset`: `ds`, `ds_role` and `DisaggregatedSetBuilder`.
* `node`: `NodeBuilder`. `service`: `ServiceBuilder`.
* `common`: the shared names, images and pod specs, and `ObjectBuilder` (metadata).

Tests import from the package: `from tests.support.builders import LeaderWorkerSetBuilder`.
"""

from tests.support.builders.common import (
    IMAGE,
    LWS_UID,
    NAME,
    NS,
    Obj,
    ObjectBuilder,
    leader_pod_spec,
    worker_pod_spec,
)
from tests.support.builders.disaggregatedset import DisaggregatedSetBuilder, ds, ds_role
from tests.support.builders.leaderworkerset import LeaderWorkerSetBuilder, cached_lws, lws
from tests.support.builders.node import NodeBuilder
from tests.support.builders.pod import (
    PodBuilder,
    leader,
    leader_pod,
    pod,
    ready_conditions,
    tpu_container,
    tpu_pod_spec,
    worker,
)
from tests.support.builders.service import ServiceBuilder
from tests.support.builders.statefulset import (
    StatefulSetBuilder,
    as_worker_of,
    leader_sts,
    worker_statefulset,
)

__all__ = [
    "IMAGE",
    "LWS_UID",
    "NAME",
    "NS",
    "DisaggregatedSetBuilder",
    "LeaderWorkerSetBuilder",
    "NodeBuilder",
    "Obj",
    "ObjectBuilder",
    "PodBuilder",
    "ServiceBuilder",
    "StatefulSetBuilder",
    "as_worker_of",
    "cached_lws",
    "ds",
    "ds_role",
    "leader",
    "leader_pod",
    "leader_pod_spec",
    "leader_sts",
    "lws",
    "pod",
    "ready_conditions",
    "tpu_container",
    "tpu_pod_spec",
    "worker",
    "worker_pod_spec",
    "worker_statefulset",
]
