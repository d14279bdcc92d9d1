"""LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``) as msgspec structs.

Field rules mirror the Go types so that "unset" means the same thing here and upstream:
a Go pointer is ``X | None = None``; a Go value field with ``omitempty`` gets its zero value as
default (``""``, ``0``), which ``omit_defaults`` leaves out of the output just like Go.

Pod templates are kept as raw JSON objects (``dict[str, Any]``), not lightkube ``PodTemplateSpec``
structs. Reason: msgspec structs drop fields they do not declare, so a pod field newer than
lightkube-models (or a field the API server accepts through a newer CRD) would silently vanish when
we decode, change something else and write the object back — and the revision hash, which upstream
computes over the full template, would change. Keeping the template raw is the only simple design
that truly round-trips; :func:`pod_template_spec` gives a typed, read-only view when code wants one.
Volume claim templates are raw for the same reason (see ``RawPersistentVolumeClaim``); the PVC
retention policy, object metadata and conditions use lightkube's structs directly: our controller
only reads their well-known fields.
"""

from typing import Annotated, Any

import msgspec
from lightkube.models.apps_v1 import StatefulSetPersistentVolumeClaimRetentionPolicy
from lightkube.models.core_v1 import PersistentVolumeClaim, PodTemplateSpec
from lightkube.models.meta_v1 import Condition, ObjectMeta

from leaderworkerset.api import constants as c
from leaderworkerset.api._base import (
    CONDITION_DEF,
    OBJECT_META_DEF,
    PVC_DEF,
    PVC_RETENTION_POLICY_DEF,
    ApiStruct,
    Int32,
    Int64,
    IntOrString,
    RawPodTemplate,
    crd,
    embedded,
    enum_of,
    list_map,
    required_object,
)
from leaderworkerset.api.scheduling import LeaderWorkerSetScheduling

# Raw like pod templates: lightkube's PersistentVolumeClaim also stamps apiVersion/kind into every
# entry, which upstream never writes there and which would change the revision hash.
RawPersistentVolumeClaim = Annotated[dict[str, Any], embedded(PVC_DEF)]
Conditions = Annotated[list[Annotated[Condition, embedded(CONDITION_DEF)]], list_map("type")]
Metadata = Annotated[ObjectMeta, embedded(OBJECT_META_DEF)]


class SubGroupPolicy(ApiStruct):
    """Splits each group into subgroups of ``subGroupSize`` pods."""

    sub_group_policy_type: (
        Annotated[str, enum_of(c.SUBGROUP_POLICY_TYPES, c.SUBGROUP_POLICY_LEADER_WORKER)] | None
    ) = None
    sub_group_size: Int32 | None = None


class RestartBackoff(ApiStruct):
    """Delays between recreations of the same group (upstream main after v1.0); no part of a revision."""

    base_seconds: Int32 | None = None
    cap_seconds: Int32 | None = None


class LeaderWorkerTemplate(ApiStruct):
    """Pod templates and shape of one group."""

    leader_template: RawPodTemplate | None = None
    worker_template: RawPodTemplate = msgspec.field(default_factory=required_object)
    size: Annotated[Int32, crd(default=1)] | None = None
    restart_policy: Annotated[
        str, enum_of(c.RESTART_POLICIES, c.RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART)
    ] = ""
    sub_group_policy: SubGroupPolicy | None = None
    volume_claim_templates: list[RawPersistentVolumeClaim] | None = None
    persistent_volume_claim_retention_policy: (
        Annotated[StatefulSetPersistentVolumeClaimRetentionPolicy, embedded(PVC_RETENTION_POLICY_DEF)] | None
    ) = None
    max_group_restarts: Annotated[Int32, crd(minimum=0)] | None = None
    # No CRD bounds on purpose: the webhook refuses a bad value naming the rule, and with the
    # webhooks off the controller reports it in a condition (docs/failures.md).
    restart_backoff: RestartBackoff | None = None

    def leader_pod_template(self) -> dict[str, Any]:
        """The raw template of leader pods: the leader template, else the worker template."""
        return self.leader_template if self.leader_template is not None else self.worker_template


class RollingUpdateConfiguration(ApiStruct):
    partition: Annotated[Int32, crd(default=0)] | None = None
    # Go always writes these (IntOrString is a struct), so an explicit 0 must survive a round trip:
    # dropping it would let the CRD default turn ``maxUnavailable: 0`` into 1.
    max_unavailable: Annotated[IntOrString, crd(default=1)] | None = None
    max_surge: Annotated[IntOrString, crd(default=0)] | None = None


class RolloutStrategy(ApiStruct):
    type: Annotated[str, enum_of(c.ROLLOUT_STRATEGY_TYPES, c.ROLLOUT_STRATEGY_ROLLING_UPDATE)] = ""
    rolling_update_configuration: RollingUpdateConfiguration | None = None


class NetworkConfig(ApiStruct):
    subdomain_policy: Annotated[str, enum_of(c.SUBDOMAIN_POLICIES)] | None = None


class LeaderWorkerSetSpec(ApiStruct):
    replicas: Annotated[Int32, crd(minimum=0, maximum=1_000_000, default=1)] | None = None
    leader_worker_template: LeaderWorkerTemplate = msgspec.field(default_factory=LeaderWorkerTemplate)
    # Go declares rolloutStrategy as a value struct; absent and ``{}`` mean the same to the webhook.
    rollout_strategy: RolloutStrategy | None = None
    startup_policy: Annotated[str, enum_of(c.STARTUP_POLICIES, c.STARTUP_POLICY_LEADER_CREATED)] = ""
    network_config: NetworkConfig | None = None
    group_identity: Annotated[str, enum_of(c.GROUP_IDENTITIES, c.GROUP_IDENTITY_ORDINAL)] = ""
    group_replacement_policy: Annotated[str, enum_of(c.GROUP_REPLACEMENT_POLICIES)] = ""
    scheduling: LeaderWorkerSetScheduling | None = None
    # podTerminationPolicy is not confirmed for v1.0 (docs/lifecycle.md); modelled so it round-trips.
    pod_termination_policy: Annotated[str, enum_of(c.POD_TERMINATION_POLICIES)] = ""


class LeaderWorkerSetStatus(ApiStruct):
    conditions: Conditions | None = None
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    replicas: Int32 = 0
    hpa_pod_selector: str = ""
    observed_generation: Int64 = 0


class LeaderWorkerSet(ApiStruct):
    """A LeaderWorkerSet object. ``apiVersion``/``kind`` are filled in when absent."""

    api_version: str | None = None
    kind: str | None = None
    metadata: Metadata = msgspec.field(default_factory=ObjectMeta)
    spec: LeaderWorkerSetSpec = msgspec.field(default_factory=LeaderWorkerSetSpec)
    status: LeaderWorkerSetStatus | None = None

    def __post_init__(self) -> None:
        if self.api_version is None:
            self.api_version = c.LWS_API_VERSION
        if self.kind is None:
            self.kind = c.LWS_KIND


class LeaderWorkerSetTemplateSpec(ApiStruct):
    """Metadata and spec of an LWS to be created (used inline by DisaggregatedSet roles)."""

    metadata: Metadata | None = None
    spec: LeaderWorkerSetSpec = msgspec.field(default_factory=LeaderWorkerSetSpec)


def pod_template_spec(raw: dict[str, Any]) -> PodTemplateSpec:
    """A typed copy of a raw pod template (fields unknown to lightkube are not in the copy)."""
    return msgspec.convert(raw, PodTemplateSpec)


def persistent_volume_claim(raw: dict[str, Any]) -> PersistentVolumeClaim:
    """A typed copy of a raw volume claim template."""
    return msgspec.convert(raw, PersistentVolumeClaim)


def raw_pod_template(template: PodTemplateSpec) -> dict[str, Any]:
    """The JSON object of a typed pod template, for storing into a raw template field."""
    raw: dict[str, Any] = msgspec.to_builtins(template)
    return raw
