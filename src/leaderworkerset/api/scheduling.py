"""``spec.scheduling`` of a LeaderWorkerSet: workload-aware gang scheduling (alpha).

Three nested levels — the whole set, each replica, and the leader/worker roles of a replica — each
carrying a policy, topology constraints, a disruption mode and shared resource claims. The JSON
spellings follow the Kubernetes 1.37 ``scheduling.k8s.io`` building blocks; the types are our own
(not lightkube's alpha models) so that the stored LWS shape does not move when those alpha types do.

Policies and disruption modes are unions: exactly one member is set, and an empty object (``{}``)
selects a member (``basic: {}``), so members are ``dict | None`` rather than booleans.

Which level is active (``SchedulingModeFor`` upstream) is decided by the webhooks layer, which owns
scheduling validation; these types only carry the shape.
"""

from typing import Annotated, Any

from leaderworkerset.api._base import ApiStruct, Int32, crd, list_map

# An empty object selecting a union member, e.g. ``basic: {}`` or ``single: {}``.
EmptyMember = dict[str, Any]
PositiveInt32 = Annotated[Int32, crd(minimum=1)]


class CompositeGangPolicy(ApiStruct):
    """Gang over child groups: at least ``minGroupCount`` children are admitted together."""

    min_group_count: PositiveInt32 | None = None


class CompositeSchedulingPolicy(ApiStruct):
    """Policy of a level that contains groups (the whole set, or one replica)."""

    basic: EmptyMember | None = None
    gang: CompositeGangPolicy | None = None


class PodGangPolicy(ApiStruct):
    """Gang over pods: at least ``minCount`` pods are admitted together."""

    min_count: PositiveInt32 | None = None


class PodSchedulingPolicy(ApiStruct):
    """Policy of a leaf level that contains pods (the leader or the workers of one replica)."""

    basic: EmptyMember | None = None
    gang: PodGangPolicy | None = None


class TopologyConstraint(ApiStruct):
    """All pods of the group land in one domain of the node label ``key``."""

    key: str = ""


class SchedulingConstraints(ApiStruct):
    """Placement constraints; same shape at composite and leaf levels."""

    topology: Annotated[list[TopologyConstraint], crd(maxItems=1)] | None = None


class DisruptionMode(ApiStruct):
    """How members may be disrupted: one by one (``single``) or all together (``all``)."""

    single: EmptyMember | None = None
    all: EmptyMember | None = None


class ResourceClaim(ApiStruct):
    """A DRA claim shared by the pods of a group; exactly one of the two references is set."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


ResourceClaims = Annotated[list[ResourceClaim], list_map("name"), crd(maxItems=4)]


class LeaderScheduling(ApiStruct):
    """Level 3: the leader PodGroup of each replica."""

    scheduling_policy: PodSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: ResourceClaims | None = None


class WorkerScheduling(ApiStruct):
    """Level 3: the worker PodGroup of each replica."""

    scheduling_policy: PodSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: ResourceClaims | None = None


class ReplicaScheduling(ApiStruct):
    """Level 2: one group per replica (leader plus its workers)."""

    scheduling_policy: CompositeSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: ResourceClaims | None = None
    leader: LeaderScheduling | None = None
    worker: WorkerScheduling | None = None


class LeaderWorkerSetScheduling(ApiStruct):
    """Level 1 (the whole set) plus the nested replica level."""

    scheduling_policy: CompositeSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: ResourceClaims | None = None
    replica: ReplicaScheduling | None = None
