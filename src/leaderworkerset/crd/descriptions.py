"""Field descriptions shown by ``kubectl explain`` for our own types.

Keyed by ``(StructName, json field)``. A description given on the model itself (``crd(description=
...)``) wins over this table; the embedded Kubernetes types bring their own descriptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_SCHEDULING_POLICY = "Gang or basic scheduling policy of the pod groups at this level (set one member)."
_SCHEDULING_CONSTRAINTS = "Topology constraints for the pod groups at this level."
_DISRUPTION_MODE = "Whether the pod groups at this level may be disrupted one pod at a time or only whole."
_RESOURCE_CLAIMS = "Dynamic resource claims shared by all pods of a pod group at this level (at most 4)."
_CONDITIONS = "Latest observations of the object's state, one entry per condition type."
_OBSERVED_GENERATION = "The metadata.generation that this status reflects."

DESCRIPTIONS: Final[Mapping[tuple[str, str], str]] = {
    # LeaderWorkerSet
    ("LeaderWorkerSet", "spec"): "Desired state of the LeaderWorkerSet.",
    ("LeaderWorkerSet", "status"): "Observed state of the LeaderWorkerSet, written by the controller.",
    ("LeaderWorkerSetSpec", "replicas"): "Number of groups (a leader plus its workers). Defaults to 1. "
    "This is the target of the scale subresource.",
    ("LeaderWorkerSetSpec", "leaderWorkerTemplate"): "Pod templates and the shape of every group.",
    ("LeaderWorkerSetSpec", "rolloutStrategy"): "How groups are replaced when the templates change.",
    ("LeaderWorkerSetSpec", "startupPolicy"): "When worker pods are created: as soon as the leader pod "
    "exists (LeaderCreated, the default) or once it is ready (LeaderReady).",
    ("LeaderWorkerSetSpec", "networkConfig"): "DNS layout of the groups' pods.",
    ("LeaderWorkerSetSpec", "groupIdentity"): "How groups are identified: by StatefulSet ordinal "
    "(Ordinal, the default) or by a random key with leaders managed by a Deployment (Hash). "
    "Immutable after creation.",
    ("LeaderWorkerSetSpec", "groupReplacementPolicy"): "When a replacement group may start scheduling: "
    "after the group it replaces is fully gone (PostTermination, the default) or at once "
    "(Immediate, Hash identity only).",
    ("LeaderWorkerSetSpec", "scheduling"): "Workload-aware gang scheduling (alpha): gang policy, "
    "topology and disruption settings for the whole set, each replica, or the leader and workers of "
    "each replica. Cannot be added or removed after creation.",
    ("LeaderWorkerSetSpec", "podTerminationPolicy"): "How a group's pods are deleted: after the leader "
    "(Default) or together with it (Parallel).",
    ("LeaderWorkerTemplate", "leaderTemplate"): "Pod template of the leader (worker index 0). When "
    "unset, the worker template is used for the leader too.",
    ("LeaderWorkerTemplate", "workerTemplate"): "Pod template of the worker pods.",
    ("LeaderWorkerTemplate", "size"): "Number of pods in each group, the leader included. Defaults to 1.",
    ("LeaderWorkerTemplate", "restartPolicy"): "What happens when a pod of a group fails or restarts: "
    "recreate the whole group (RecreateGroupOnPodRestart, the default), recreate it only after all of "
    "its pods have started once (RecreateGroupAfterStart), or nothing beyond the pod's own restart "
    "(None; Default is an alias).",
    ("LeaderWorkerTemplate", "subGroupPolicy"): "Splits every group into subgroups, for example one "
    "per accelerator slice. Cannot be added or removed after creation.",
    ("LeaderWorkerTemplate", "volumeClaimTemplates"): "Persistent volume claims created for every pod "
    "of the group; each needs a matching volumeMount in the templates.",
    ("LeaderWorkerTemplate", "persistentVolumeClaimRetentionPolicy"): "Whether claims from "
    "volumeClaimTemplates are kept or deleted when groups are deleted or scaled down.",
    ("LeaderWorkerTemplate", "maxGroupRestarts"): "How many times a group may be recreated "
    "automatically per revision before recovery stops; unset means no limit.",
    ("LeaderWorkerTemplate", "restartBackoff"): "Exponential delay between consecutive recreations of "
    "the same group (restartPolicy RecreateGroupOnPodRestart or RecreateGroupAfterStart only); unset "
    "means a failed group is recreated at once. Changing it rolls no group.",
    ("RestartBackoff", "baseSeconds"): "Delay before the second recreation in a row, doubled for each "
    "further one; greater than 0, at most capSeconds. Defaults to 10.",
    ("RestartBackoff", "capSeconds"): "Longest delay between two recreations in a row; greater than 0. "
    "Defaults to 300. A group that runs twice this long without failing starts over without delay.",
    ("SubGroupPolicy", "subGroupPolicyType"): "Whether the leader belongs to the first subgroup "
    "(LeaderWorker, the default) or to none (LeaderExcluded).",
    ("SubGroupPolicy", "subGroupSize"): "Number of pods in each subgroup.",
    ("RolloutStrategy", "type"): "Rollout strategy; RollingUpdate is the only one.",
    ("RolloutStrategy", "rollingUpdateConfiguration"): "Parameters of the rolling update.",
    ("RollingUpdateConfiguration", "partition"): "Groups with an index below the partition keep "
    "their current revision. Defaults to 0.",
    ("RollingUpdateConfiguration", "maxUnavailable"): "Most groups that may be unavailable during "
    "the update, a number or a percentage of replicas (rounded down). Defaults to 1.",
    ("RollingUpdateConfiguration", "maxSurge"): "Most extra groups that may be created above "
    "replicas during the update, a number or a percentage (rounded up). Defaults to 0.",
    ("NetworkConfig", "subdomainPolicy"): "One headless Service for all groups (Shared) or one per "
    "group (UniquePerReplica).",
    ("LeaderWorkerSetStatus", "conditions"): _CONDITIONS,
    ("LeaderWorkerSetStatus", "readyReplicas"): "Number of groups whose pods are all ready.",
    ("LeaderWorkerSetStatus", "updatedReplicas"): "Number of groups at the current revision.",
    ("LeaderWorkerSetStatus", "replicas"): "Number of groups that exist, surge groups included.",
    ("LeaderWorkerSetStatus", "hpaPodSelector"): "Label selector of the leader pods, used by the "
    "scale subresource and the HorizontalPodAutoscaler.",
    ("LeaderWorkerSetStatus", "observedGeneration"): _OBSERVED_GENERATION,
    # spec.scheduling
    ("LeaderWorkerSetScheduling", "schedulingPolicy"): _SCHEDULING_POLICY,
    ("LeaderWorkerSetScheduling", "schedulingConstraints"): _SCHEDULING_CONSTRAINTS,
    ("LeaderWorkerSetScheduling", "disruptionMode"): _DISRUPTION_MODE,
    ("LeaderWorkerSetScheduling", "resourceClaims"): _RESOURCE_CLAIMS,
    ("LeaderWorkerSetScheduling", "replica"): "Settings for each replica (one leader and its workers).",
    ("ReplicaScheduling", "schedulingPolicy"): _SCHEDULING_POLICY,
    ("ReplicaScheduling", "schedulingConstraints"): _SCHEDULING_CONSTRAINTS,
    ("ReplicaScheduling", "disruptionMode"): _DISRUPTION_MODE,
    ("ReplicaScheduling", "resourceClaims"): _RESOURCE_CLAIMS,
    ("ReplicaScheduling", "leader"): "Settings for the leader pod group of each replica.",
    ("ReplicaScheduling", "worker"): "Settings for the worker pod group of each replica.",
    ("LeaderScheduling", "schedulingPolicy"): _SCHEDULING_POLICY,
    ("LeaderScheduling", "schedulingConstraints"): _SCHEDULING_CONSTRAINTS,
    ("LeaderScheduling", "disruptionMode"): _DISRUPTION_MODE,
    ("LeaderScheduling", "resourceClaims"): _RESOURCE_CLAIMS,
    ("WorkerScheduling", "schedulingPolicy"): _SCHEDULING_POLICY,
    ("WorkerScheduling", "schedulingConstraints"): _SCHEDULING_CONSTRAINTS,
    ("WorkerScheduling", "disruptionMode"): _DISRUPTION_MODE,
    ("WorkerScheduling", "resourceClaims"): _RESOURCE_CLAIMS,
    ("CompositeSchedulingPolicy", "basic"): "Schedule the child groups independently.",
    ("CompositeSchedulingPolicy", "gang"): "Admit at least minGroupCount child groups together.",
    ("CompositeGangPolicy", "minGroupCount"): "Smallest number of child groups admitted together.",
    ("PodSchedulingPolicy", "basic"): "Schedule the pods independently.",
    ("PodSchedulingPolicy", "gang"): "Admit at least minCount pods together.",
    ("PodGangPolicy", "minCount"): "Smallest number of pods admitted together.",
    ("SchedulingConstraints", "topology"): "Keep all pods of a group in one domain of a node label.",
    ("TopologyConstraint", "key"): "Node label key whose value defines a topology domain.",
    ("DisruptionMode", "single"): "Pods may be disrupted one at a time.",
    ("DisruptionMode", "all"): "Pods may only be disrupted all together.",
    ("ResourceClaim", "name"): "Name of the claim within this list.",
    ("ResourceClaim", "resourceClaimName"): "An existing ResourceClaim to share.",
    ("ResourceClaim", "resourceClaimTemplateName"): "A ResourceClaimTemplate to create the shared "
    "claim from.",
    # DisaggregatedSet
    ("DisaggregatedSet", "spec"): "Desired state of the DisaggregatedSet.",
    ("DisaggregatedSet", "status"): "Observed state of the DisaggregatedSet, written by the controller.",
    ("DisaggregatedSetSpec", "roles"): "The roles (1 to 10, unique names); each runs as one "
    "LeaderWorkerSet per slice and revision.",
    ("DisaggregatedSetSpec", "slices"): "Number of independent copies of the whole set of roles "
    "(1 to 100). Defaults to 1.",
    ("DisaggregatedSetSpec", "scalingPolicy"): "How replica targets apply while a rollout runs; not "
    "part of the revision (changing it rolls nothing).",
    ("DisaggregatedSetScalingPolicy", "duringRollout"): "RolloutCoupled (the default): a lower target "
    "applies once the old revisions are drained. AdvanceRollout: the latest target applies mid-rollout, "
    "old revisions drain first and the new one shrinks only within its availability budget.",
    ("DisaggregatedSetSpec", "placementPolicy"): "How the pods of a slice are placed relative to "
    "other slices.",
    ("DisaggregatedRoleSpec", "name"): "Role name, a DNS label; used in the names and labels of the "
    "role's objects.",
    ("DisaggregatedRoleSpec", "scaling"): "Where the role's replica count comes from.",
    ("DisaggregatedRoleSpec", "metadata"): "Labels and annotations for the role's LeaderWorkerSets.",
    ("DisaggregatedRoleSpec", "spec"): "Spec of the role's LeaderWorkerSets; replicas is managed by "
    "the controller from here or from the role scaler.",
    ("RoleScaling", "mode"): "Static (the default): replicas come from the role's spec. External: a "
    "DisaggregatedSetRoleScaler (HPA, KEDA, ...) sets them.",
    ("PlacementPolicy", "type"): "None (the default), ExclusiveSlice (one slice per topology domain) "
    "or ExclusiveTopology.",
    ("PlacementPolicy", "topology"): "Node label key of the topology domain; required unless the "
    "type is None.",
    ("DisaggregatedSetStatus", "observedGeneration"): _OBSERVED_GENERATION,
    ("DisaggregatedSetStatus", "roleStatuses"): "Replica counts per role, summed over slices and revisions.",
    ("DisaggregatedSetStatus", "conditions"): _CONDITIONS,
    ("RoleStatus", "name"): "Role name.",
    ("RoleStatus", "replicas"): "Groups of the role that exist.",
    ("RoleStatus", "readyReplicas"): "Groups of the role that are ready.",
    ("RoleStatus", "updatedReplicas"): "Groups of the role at the target revision.",
    # DisaggregatedSetRoleScaler
    ("DisaggregatedSetRoleScaler", "spec"): "Desired replicas of the role.",
    ("DisaggregatedSetRoleScaler", "status"): "Observed replicas of the role.",
    ("DisaggregatedSetRoleScalerSpec", "replicas"): "Desired number of groups of the role, summed "
    "over revisions; written by autoscalers through the scale subresource.",
    ("DisaggregatedSetRoleScalerStatus", "replicas"): "Groups of the role that exist, over all "
    "slices and revisions.",
    ("DisaggregatedSetRoleScalerStatus", "selector"): "Label selector of the role's leader pods, "
    "for autoscalers.",
    ("DisaggregatedSetRoleScalerStatus", "observedGeneration"): _OBSERVED_GENERATION,
    ("DisaggregatedSetRoleScalerStatus", "conditions"): _CONDITIONS,
}
