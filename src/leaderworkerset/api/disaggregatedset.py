"""DisaggregatedSet and DisaggregatedSetRoleScaler (``disaggregatedset.x-k8s.io/v1``).

Same conventions as ``leaderworkerset.py`` (Go pointer ⇒ ``| None``, omitempty value ⇒ zero default).
A role inlines an LWS template (``metadata`` + ``spec``), so its pod templates stay raw too.
"""

from typing import Annotated

import msgspec
from lightkube.models.meta_v1 import ObjectMeta

from leaderworkerset.api import constants as c
from leaderworkerset.api import upstreammain as um
from leaderworkerset.api._base import ApiStruct, Int32, Int64, crd, enum_of, list_map, required_list
from leaderworkerset.api.leaderworkerset import Conditions, LeaderWorkerSetSpec, Metadata

DNS_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class RoleScaling(ApiStruct):
    mode: Annotated[str, enum_of(c.ROLE_SCALING_MODES, c.ROLE_SCALING_STATIC)] = ""


class DisaggregatedRoleSpec(ApiStruct):
    """One role: a name, how its replicas are driven, and the template of its child LWS."""

    name: Annotated[str, crd(minLength=1, maxLength=63, pattern=DNS_LABEL_PATTERN)] = ""
    scaling: RoleScaling | None = None
    metadata: Metadata | None = None
    spec: LeaderWorkerSetSpec = msgspec.field(default_factory=LeaderWorkerSetSpec)

    def is_external(self) -> bool:
        return self.scaling is not None and self.scaling.mode == c.ROLE_SCALING_EXTERNAL


class DisaggregatedSetScalingPolicy(ApiStruct):
    during_rollout: Annotated[
        str, enum_of(um.SCALING_DURING_ROLLOUT_POLICIES, um.SCALING_ROLLOUT_COUPLED)
    ] = ""


class PlacementPolicy(ApiStruct):
    type: Annotated[str, enum_of(c.PLACEMENT_TYPES, c.PLACEMENT_NONE)] = ""
    topology: str = ""


# 1 to 10 roles, as upstream main after v1.0 (v1.0 required at least 2): a single-role set is a
# LeaderWorkerSet with the DisaggregatedSet's revision-managed rollouts and role scaler.
Roles = Annotated[list[DisaggregatedRoleSpec], list_map("name"), crd(minItems=1, maxItems=10)]


class DisaggregatedSetSpec(ApiStruct):
    roles: Roles = msgspec.field(default_factory=required_list)
    slices: Annotated[Int32, crd(minimum=1, maximum=100, default=1)] | None = None
    scaling_policy: DisaggregatedSetScalingPolicy | None = None
    placement_policy: PlacementPolicy | None = None


class RoleStatus(ApiStruct):
    name: str = ""
    replicas: Int32 = 0
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0


class DisaggregatedSetStatus(ApiStruct):
    observed_generation: Int64 = 0
    role_statuses: Annotated[list[RoleStatus], list_map("name")] | None = None
    conditions: Conditions | None = None


class DisaggregatedSet(ApiStruct):
    api_version: str | None = None
    kind: str | None = None
    metadata: Metadata = msgspec.field(default_factory=ObjectMeta)
    spec: DisaggregatedSetSpec = msgspec.field(default_factory=DisaggregatedSetSpec)
    status: DisaggregatedSetStatus | None = None

    def __post_init__(self) -> None:
        if self.api_version is None:
            self.api_version = c.DS_API_VERSION
        if self.kind is None:
            self.kind = c.DS_KIND

    def role(self, name: str) -> DisaggregatedRoleSpec | None:
        return next((r for r in self.spec.roles if r.name == name), None)


# Go serialises scaler spec.replicas even when 0 (no omitempty): the /scale subresource needs the
# field to exist. This struct therefore does not omit defaults.
class DisaggregatedSetRoleScalerSpec(msgspec.Struct, rename="camel", kw_only=True):
    replicas: Annotated[Int32, crd(minimum=0, default=0)] = 0


class DisaggregatedSetRoleScalerStatus(ApiStruct):
    replicas: Int32 = 0
    selector: str = ""
    observed_generation: Int64 = 0
    conditions: Conditions | None = None


class DisaggregatedSetRoleScaler(ApiStruct):
    api_version: str | None = None
    kind: str | None = None
    metadata: Metadata = msgspec.field(default_factory=ObjectMeta)
    spec: DisaggregatedSetRoleScalerSpec = msgspec.field(default_factory=DisaggregatedSetRoleScalerSpec)
    status: DisaggregatedSetRoleScalerStatus | None = None

    def __post_init__(self) -> None:
        if self.api_version is None:
            self.api_version = c.DS_API_VERSION
        if self.kind is None:
            self.kind = c.DSRS_KIND
