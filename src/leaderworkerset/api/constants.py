"""Every string the outside world sees: API groups, labels, annotations, env vars, gates, conditions,
events, enum values and default names.

These are part of the compatibility contract with upstream kubernetes-sigs/lws v1.0:
manifests, dashboards and user scripts written for upstream select on exactly these spellings, so
nothing else in ``src/`` may spell them — import them from here instead.
"""

from typing import Final

# --------------------------------------------------------------------------------------------------
# API groups, versions, kinds, plurals
# --------------------------------------------------------------------------------------------------

LWS_GROUP: Final = "leaderworkerset.x-k8s.io"
LWS_VERSION: Final = "v1"
LWS_API_VERSION: Final = f"{LWS_GROUP}/{LWS_VERSION}"
LWS_KIND: Final = "LeaderWorkerSet"
LWS_LIST_KIND: Final = "LeaderWorkerSetList"
LWS_PLURAL: Final = "leaderworkersets"
LWS_SINGULAR: Final = "leaderworkerset"
LWS_SHORT_NAME: Final = "lws"

DS_GROUP: Final = "disaggregatedset.x-k8s.io"
DS_VERSION: Final = "v1"
DS_API_VERSION: Final = f"{DS_GROUP}/{DS_VERSION}"
DS_KIND: Final = "DisaggregatedSet"
DS_LIST_KIND: Final = "DisaggregatedSetList"
DS_PLURAL: Final = "disaggregatedsets"
DS_SINGULAR: Final = "disaggregatedset"

DSRS_KIND: Final = "DisaggregatedSetRoleScaler"
DSRS_LIST_KIND: Final = "DisaggregatedSetRoleScalerList"
DSRS_PLURAL: Final = "disaggregatedsetrolescalers"
DSRS_SINGULAR: Final = "disaggregatedsetrolescaler"
DSRS_SHORT_NAME: Final = "dsrs"

CONFIG_GROUP: Final = "config.lws.x-k8s.io"
CONFIG_VERSION_V1ALPHA1: Final = "v1alpha1"
CONFIG_VERSION_V1: Final = "v1"
CONFIG_API_VERSION_V1ALPHA1: Final = f"{CONFIG_GROUP}/{CONFIG_VERSION_V1ALPHA1}"
CONFIG_API_VERSION_V1: Final = f"{CONFIG_GROUP}/{CONFIG_VERSION_V1}"
CONFIG_KIND: Final = "Configuration"

# --------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------

_LWS_PREFIX: Final = "leaderworkerset.sigs.k8s.io/"

LABEL_SET_NAME: Final = _LWS_PREFIX + "name"
LABEL_TEMPLATE_REVISION_HASH: Final = _LWS_PREFIX + "template-revision-hash"
LABEL_WORKER_INDEX: Final = _LWS_PREFIX + "worker-index"
LABEL_GROUP_INDEX: Final = _LWS_PREFIX + "group-index"
LABEL_GROUP_KEY: Final = _LWS_PREFIX + "group-key"
LABEL_SUBGROUP_INDEX: Final = _LWS_PREFIX + "subgroup-index"
LABEL_SUBGROUP_KEY: Final = _LWS_PREFIX + "subgroup-key"
LABEL_ROLE: Final = _LWS_PREFIX + "role"
LABEL_SCHEDULING_LEVEL: Final = _LWS_PREFIX + "scheduling-level"

# Values of LABEL_ROLE.
ROLE_LEADER: Final = "leader"
ROLE_WORKER: Final = "worker"

# Value of LABEL_WORKER_INDEX on leader pods.
LEADER_WORKER_INDEX: Final = "0"

# DisaggregatedSet labels on child LWS, their pod templates, services and role scalers.
_DS_PREFIX: Final = "disaggregatedset.x-k8s.io/"

LABEL_APP: Final = "app"
LABEL_DS_NAME: Final = _DS_PREFIX + "name"
LABEL_DS_ROLE: Final = _DS_PREFIX + "role"
LABEL_DS_SLICE: Final = _DS_PREFIX + "slice"
LABEL_DS_REVISION: Final = _DS_PREFIX + "revision"

# Label the StatefulSet controller puts on its pods; read, never written, by us.
LABEL_STATEFULSET_POD_NAME: Final = "statefulset.kubernetes.io/pod-name"
LABEL_CONTROLLER_REVISION_HASH: Final = "controller-revision-hash"
LABEL_POD_TEMPLATE_HASH: Final = "pod-template-hash"

# --------------------------------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------------------------------

ANNOTATION_EXCLUSIVE_TOPOLOGY: Final = _LWS_PREFIX + "exclusive-topology"
ANNOTATION_SUBGROUP_EXCLUSIVE_TOPOLOGY: Final = _LWS_PREFIX + "subgroup-exclusive-topology"
ANNOTATION_SIZE: Final = _LWS_PREFIX + "size"
ANNOTATION_REPLICAS: Final = _LWS_PREFIX + "replicas"
ANNOTATION_LEADER_NAME: Final = _LWS_PREFIX + "leader-name"
ANNOTATION_SUBGROUP_SIZE: Final = _LWS_PREFIX + "subgroup-size"
ANNOTATION_SUBGROUP_POLICY_TYPE: Final = _LWS_PREFIX + "subgroup-policy-type"
# Upstream spells this one in camelCase; keep it byte-identical.
ANNOTATION_SUBDOMAIN_POLICY: Final = _LWS_PREFIX + "subdomainPolicy"
ANNOTATION_LEADER_REQUESTS_TPUS: Final = _LWS_PREFIX + "leader-requests-tpus"
ANNOTATION_EXPERIMENTAL_RECREATE_GROUP_AFTER_START: Final = (
    _LWS_PREFIX + "experimental-recreate-group-after-start"
)
ANNOTATION_LEADER_ADDRESS: Final = _LWS_PREFIX + "leader-address"
# The exact key is not confirmed by upstream v1.0's sources we read ("likely"); this is the best guess.
ANNOTATION_GROUP_IDENTITY: Final = _LWS_PREFIX + "group-identity"
ANNOTATION_GROUP_RESTART_COUNTS: Final = _LWS_PREFIX + "group-restart-counts"
ANNOTATION_GROUP_RESTART_BUDGET_EXHAUSTED: Final = _LWS_PREFIX + "group-restart-budget-exhausted"
ANNOTATION_RECOVER: Final = _LWS_PREFIX + "recover"
ANNOTATION_WORKLOAD_AWARE_SCHEDULING: Final = _LWS_PREFIX + "workload-aware-scheduling"
ANNOTATION_WORKLOAD_NAME: Final = _LWS_PREFIX + "workload-name"
ANNOTATION_POD_TERMINATION_POLICY: Final = _LWS_PREFIX + "pod-termination-policy"

# Scheduler-provider annotations.
ANNOTATION_SCHEDULING_GROUP_NAME: Final = "scheduling.k8s.io/group-name"
ANNOTATION_VOLCANO_QUEUE_NAME: Final = "scheduling.volcano.sh/queue-name"
VOLCANO_ANNOTATION_PREFIX: Final = "volcano.sh/"
ANNOTATION_SCHEDULING_GROUP_TEMPLATE_NAME: Final = "scheduling.k8s.io/group-template-name"
ANNOTATION_SCHEDULING_PARENT_COMPOSITE_POD_GROUP: Final = "scheduling.k8s.io/parent-compositepodgroup"

# Kubernetes-defined annotation; Hash leaders waiting at the replacement gate carry this value.
ANNOTATION_POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
POD_DELETION_COST_WAITING_LEADER: Final = "-100"

# DisaggregatedSet annotations.
ANNOTATION_DS_INITIAL_REPLICAS: Final = _DS_PREFIX + "initial-replicas"

# Values used with the annotations above.
ANNOTATION_TRUE: Final = "true"
# Legacy value of ANNOTATION_WORKLOAD_AWARE_SCHEDULING meaning the replica mode.
WORKLOAD_AWARE_SCHEDULING_LEGACY_TRUE: Final = "true"

# --------------------------------------------------------------------------------------------------
# Environment variables
# --------------------------------------------------------------------------------------------------

ENV_LWS_LEADER_ADDRESS: Final = "LWS_LEADER_ADDRESS"
ENV_LWS_GROUP_SIZE: Final = "LWS_GROUP_SIZE"
ENV_LWS_WORKER_INDEX: Final = "LWS_WORKER_INDEX"

ENV_TPU_WORKER_HOSTNAMES: Final = "TPU_WORKER_HOSTNAMES"
ENV_TPU_WORKER_ID: Final = "TPU_WORKER_ID"
ENV_TPU_NAME: Final = "TPU_NAME"
ENV_TPU_PROCESS_ADDRESSES: Final = "TPU_PROCESS_ADDRESSES"
ENV_TPU_PROCESS_PORT: Final = "TPU_PROCESS_PORT"
# Resource name whose request marks a container as a TPU container.
TPU_RESOURCE_NAME: Final = "google.com/tpu"

ENV_DISAGGREGATEDSET_NAME: Final = "DISAGGREGATEDSET_NAME"
ENV_DISAGGREGATEDSET_ROLE: Final = "DISAGGREGATEDSET_ROLE"
ENV_DISAGGREGATEDSET_SLICE: Final = "DISAGGREGATEDSET_SLICE"
ENV_DISAGGREGATEDSET_REVISION: Final = "DISAGGREGATEDSET_REVISION"

# Manager process environment: webhooks are off only when this is exactly "false".
ENV_ENABLE_WEBHOOKS: Final = "ENABLE_WEBHOOKS"

# --------------------------------------------------------------------------------------------------
# Readiness gates, scheduling gates, finalizers, pod conditions
# --------------------------------------------------------------------------------------------------

READINESS_GATE_GROUP_READY: Final = _LWS_PREFIX + "group-ready"
# The pod condition written for the readiness gate has the same type string.
POD_CONDITION_GROUP_READY: Final = READINESS_GATE_GROUP_READY
REASON_WORKER_STATEFULSET_READY: Final = "WorkerStatefulSetReady"
REASON_WORKER_STATEFULSET_NOT_READY: Final = "WorkerStatefulSetNotReady"

SCHEDULING_GATE_GROUP_REPLACEMENT: Final = _LWS_PREFIX + "group-replacement"

FINALIZER_GROUP_RESTART_BUDGET_CLEANUP: Final = _LWS_PREFIX + "group-restart-budget-cleanup"

# --------------------------------------------------------------------------------------------------
# Enum values of the LeaderWorkerSet API
# --------------------------------------------------------------------------------------------------

RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART: Final = "RecreateGroupOnPodRestart"
RESTART_POLICY_RECREATE_GROUP_AFTER_START: Final = "RecreateGroupAfterStart"
RESTART_POLICY_DEPRECATED_DEFAULT: Final = "Default"
RESTART_POLICY_NONE: Final = "None"
RESTART_POLICIES: Final = (
    RESTART_POLICY_DEPRECATED_DEFAULT,
    RESTART_POLICY_RECREATE_GROUP_ON_POD_RESTART,
    RESTART_POLICY_RECREATE_GROUP_AFTER_START,
    RESTART_POLICY_NONE,
)

ROLLOUT_STRATEGY_ROLLING_UPDATE: Final = "RollingUpdate"
ROLLOUT_STRATEGY_TYPES: Final = (ROLLOUT_STRATEGY_ROLLING_UPDATE,)

STARTUP_POLICY_LEADER_CREATED: Final = "LeaderCreated"
STARTUP_POLICY_LEADER_READY: Final = "LeaderReady"
STARTUP_POLICIES: Final = (STARTUP_POLICY_LEADER_CREATED, STARTUP_POLICY_LEADER_READY)

SUBGROUP_POLICY_LEADER_WORKER: Final = "LeaderWorker"
SUBGROUP_POLICY_LEADER_EXCLUDED: Final = "LeaderExcluded"
SUBGROUP_POLICY_TYPES: Final = (SUBGROUP_POLICY_LEADER_WORKER, SUBGROUP_POLICY_LEADER_EXCLUDED)

SUBDOMAIN_SHARED: Final = "Shared"
SUBDOMAIN_UNIQUE_PER_REPLICA: Final = "UniquePerReplica"
SUBDOMAIN_POLICIES: Final = (SUBDOMAIN_SHARED, SUBDOMAIN_UNIQUE_PER_REPLICA)

GROUP_IDENTITY_ORDINAL: Final = "Ordinal"
GROUP_IDENTITY_HASH: Final = "Hash"
GROUP_IDENTITIES: Final = (GROUP_IDENTITY_ORDINAL, GROUP_IDENTITY_HASH)

GROUP_REPLACEMENT_POST_TERMINATION: Final = "PostTermination"
GROUP_REPLACEMENT_IMMEDIATE: Final = "Immediate"
GROUP_REPLACEMENT_POLICIES: Final = (GROUP_REPLACEMENT_POST_TERMINATION, GROUP_REPLACEMENT_IMMEDIATE)

POD_TERMINATION_POLICY_DEFAULT: Final = "Default"
POD_TERMINATION_POLICY_PARALLEL: Final = "Parallel"
POD_TERMINATION_POLICIES: Final = (POD_TERMINATION_POLICY_DEFAULT, POD_TERMINATION_POLICY_PARALLEL)

# Workload-aware scheduling: levels / modes, disruption modes.
SCHEDULING_MODE_LWS: Final = "lws"
SCHEDULING_MODE_REPLICA: Final = "replica"
SCHEDULING_MODE_ROLE: Final = "role"
SCHEDULING_MODES: Final = (SCHEDULING_MODE_LWS, SCHEDULING_MODE_REPLICA, SCHEDULING_MODE_ROLE)
# Template names inside the Workload object of the kubernetes provider (PodGroup workloadRef).
WORKLOAD_TEMPLATE_LWS: Final = "lws"
WORKLOAD_TEMPLATE_REPLICA: Final = "replica"
WORKLOAD_TEMPLATE_LEADER: Final = "leader"
WORKLOAD_TEMPLATE_WORKER: Final = "worker"
DISRUPTION_MODE_SINGLE: Final = "Single"
DISRUPTION_MODE_ALL: Final = "All"
DISRUPTION_MODES: Final = (DISRUPTION_MODE_SINGLE, DISRUPTION_MODE_ALL)

# PVC retention policy values (StatefulSet API, copied onto our StatefulSets).
PVC_RETENTION_RETAIN: Final = "Retain"
PVC_RETENTION_DELETE: Final = "Delete"
PVC_RETENTION_POLICIES: Final = (PVC_RETENTION_RETAIN, PVC_RETENTION_DELETE)

# --------------------------------------------------------------------------------------------------
# Enum values of the DisaggregatedSet API
# --------------------------------------------------------------------------------------------------

ROLE_SCALING_STATIC: Final = "Static"
ROLE_SCALING_EXTERNAL: Final = "External"
ROLE_SCALING_MODES: Final = (ROLE_SCALING_STATIC, ROLE_SCALING_EXTERNAL)

PLACEMENT_NONE: Final = "None"
PLACEMENT_EXCLUSIVE_SLICE: Final = "ExclusiveSlice"
PLACEMENT_EXCLUSIVE_TOPOLOGY: Final = "ExclusiveTopology"
PLACEMENT_TYPES: Final = (PLACEMENT_NONE, PLACEMENT_EXCLUSIVE_SLICE, PLACEMENT_EXCLUSIVE_TOPOLOGY)

# Suffix of the DS private (per child LWS) Service name.
DS_PRIVATE_SERVICE_SUFFIX: Final = "-prv"

# --------------------------------------------------------------------------------------------------
# Conditions
# --------------------------------------------------------------------------------------------------

CONDITION_TRUE: Final = "True"
CONDITION_FALSE: Final = "False"
CONDITION_UNKNOWN: Final = "Unknown"

# LeaderWorkerSet condition types.
CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
CONDITION_UPDATE_IN_PROGRESS: Final = "UpdateInProgress"
CONDITION_DEGRADED: Final = "Degraded"
CONDITION_WORKLOAD_SCHEDULING_CREATED: Final = "WorkloadSchedulingCreated"

# LeaderWorkerSet condition reasons and messages.
REASON_ALL_GROUPS_READY: Final = "AllGroupsReady"
MESSAGE_ALL_GROUPS_READY: Final = "All replicas are ready"
REASON_GROUPS_PROGRESSING: Final = "GroupsProgressing"
MESSAGE_GROUPS_PROGRESSING: Final = "Replicas are progressing"
REASON_GROUPS_UPDATING: Final = "GroupsUpdating"
MESSAGE_GROUPS_UPDATING: Final = "Rolling Upgrade is in progress"
REASON_REPLICA_RESTART_BUDGET_EXCEEDED: Final = "ReplicaRestartBudgetExceeded"
REASON_AS_EXPECTED: Final = "AsExpected"
MESSAGE_DEGRADED_FALSE: Final = "No replica has exhausted its restart budget"
MESSAGE_AVAILABLE_FALSE_DEGRADED: Final = "Not all replicas are ready"
MESSAGE_PROGRESSING_FALSE_DEGRADED: Final = "Automatic recovery is stopped for one or more replicas"
MESSAGE_UPDATE_IN_PROGRESS_FALSE_DEGRADED: Final = "No rolling update is in progress"
# Degraded=True's message: upstream's text was not found in the v1.0 sources read (docs/lifecycle.md).
MESSAGE_DEGRADED_TRUE: Final = "One or more replicas exhausted their restart budget"
# Appended to the condition message in the condition-change event.
MESSAGE_CONDITION_EVENT_SUFFIX_FMT: Final = ", with {ready} groups ready of total {total} groups"
# This project's own (upstream only logs the reconcile error): a LeaderWorkerSet the controller
# cannot act on as written (a value it cannot decode, or a child the API server refuses) gets
# Progressing=False with this reason and the error, and a Warning event of the same reason.
REASON_INVALID_SPEC: Final = "InvalidSpec"

# WorkloadSchedulingCreated reasons.
REASON_SCHEDULING_PREREQUISITES_CREATED: Final = "SchedulingPrerequisitesCreated"
REASON_API_NOT_AVAILABLE: Final = "APINotAvailable"
REASON_UNSUPPORTED_PROVIDER_CAPABILITY: Final = "UnsupportedProviderCapability"
REASON_INVALID_SCHEDULING_CONFIGURATION: Final = "InvalidSchedulingConfiguration"
REASON_WORKLOAD_CREATE_FAILED: Final = "WorkloadCreateFailed"
REASON_POD_GROUP_CREATE_FAILED: Final = "PodGroupCreateFailed"
REASON_PARENT_WORKLOAD_NOT_READY: Final = "ParentWorkloadNotReady"
REASON_POD_GROUP_CLEANUP_BLOCKED: Final = "PodGroupCleanupBlocked"

# DisaggregatedSet conditions.
REASON_ALL_ROLES_READY: Final = "AllRolesReady"
MESSAGE_ALL_ROLES_READY: Final = (
    "All roles have reached their desired replica count, ready and updated to the current revision"
)
REASON_ROLLOUT_IN_PROGRESS: Final = "RolloutInProgress"
MESSAGE_ROLLOUT_IN_PROGRESS: Final = (
    "Not all roles have reached their desired replica count, ready and updated to the current revision"
)
REASON_REPLICA_TARGETS_UNRESOLVED: Final = "ReplicaTargetsUnresolved"
MESSAGE_REPLICA_TARGETS_UNRESOLVED_PREFIX: Final = (
    "DisaggregatedSetRoleScaler could not be created or adopted for roles: "
)

# DisaggregatedSetRoleScaler condition.
CONDITION_READY: Final = "Ready"
REASON_BOUND: Final = "Bound"
MESSAGE_BOUND: Final = "Scaler bound to a live DisaggregatedSet role"

# --------------------------------------------------------------------------------------------------
# Events: types, reasons, actions, message formats
# --------------------------------------------------------------------------------------------------

EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"

# The "action" field of events.k8s.io events.
EVENT_ACTION_CREATE: Final = "Create"
EVENT_ACTION_UPDATE: Final = "Update"
EVENT_ACTION_DELETE: Final = "Delete"
EVENT_ACTION_RECOVER: Final = "Recover"
EVENT_ACTION_CONFLICT: Final = "Conflict"
EVENT_ACTION_WAIT: Final = "Wait"
EVENT_ACTION_RECONCILE: Final = "Reconcile"  # this project's own: the InvalidSpec event

# Reporting components (recorder names).
EVENT_COMPONENT_LWS: Final = "leaderworkerset"
EVENT_COMPONENT_DS: Final = "disaggregatedset"

# LeaderWorkerSet and pod controller reasons.
EVENT_CREATING_REVISION: Final = "CreatingRevision"
EVENT_FAILED_CREATE: Final = "FailedCreate"
EVENT_FAILED_UPDATE: Final = "FailedUpdate"
EVENT_GROUPS_PROGRESSING: Final = REASON_GROUPS_PROGRESSING
EVENT_GROUPS_UPDATING: Final = REASON_GROUPS_UPDATING
EVENT_RECREATE_GROUP: Final = "RecreateGroup"
EVENT_REPLICA_RESTART_BUDGET_EXCEEDED: Final = REASON_REPLICA_RESTART_BUDGET_EXCEEDED
EVENT_GROUP_REPLACEMENT_DEFERRED: Final = "GroupReplacementDeferred"
EVENT_GROUP_REPLACEMENT_ADMITTED: Final = "GroupReplacementAdmitted"
# This project's own: the cluster's StatefulSets ignore maxUnavailable (feature gate
# MaxUnavailableStatefulSet off), so the controller deletes outdated leader pods itself, within the
# budget (core/rollout/leaderreplacement.py). Recorded once per update revision.
EVENT_MAX_UNAVAILABLE_EMULATED: Final = "MaxUnavailableEmulated"
MSG_MAX_UNAVAILABLE_EMULATED: Final = (
    "The API server dropped maxUnavailable from leader statefulset %s (feature gate "
    "MaxUnavailableStatefulSet is off), so its StatefulSet controller replaces one group at a time; "
    "the LeaderWorkerSet controller deletes outdated leader pods itself, up to %d groups at a time "
    "(revision %s)"
)
EVENT_UNEXPECTED_POD_GROUP_OWNER: Final = "UnexpectedPodGroupOwner"
# This project's own: a pod with the LWS name label that cannot be related to a group (its worker
# index label is missing); upstream retries the reconcile error forever without telling anyone.
EVENT_INVALID_LABELS: Final = "InvalidLabels"
# This project's own: a StatefulSet under a group's worker name that its leader pod does not control
# (nobody of ours made it). Upstream ignores the create's AlreadyExists silently and the group never
# gets its workers; we leave the object alone too, but say so on the LWS.
EVENT_FOREIGN_WORKER_STATEFULSET: Final = "ForeignWorkerStatefulSet"
MSG_FOREIGN_WORKER_STATEFULSET: Final = (
    "StatefulSet %s has the name of group %s's worker StatefulSet but leader pod %s does not control it"
    " (controller: %s): the group gets no workers until it is removed"
)

# LeaderWorkerSet and pod controller messages (printf-style, as upstream formats them).
MSG_CREATING_REVISION_NEW: Final = "Creating revision with key %s for a newly created LeaderWorkerSet"
MSG_CREATING_REVISION_MISSING: Final = "Creating missing revision with key %s for existing LeaderWorkerSet"
MSG_CREATING_REVISION_UPDATED: Final = "Creating revision with key %s for updated LWS"
MSG_FAILED_CREATE_LEADER_STS: Final = "Failed to create leader statefulset %s: %v"
MSG_FAILED_CREATE_LEADER_DEPLOYMENT: Final = "Failed to create leader deployment %s: %v"
MSG_FAILED_CREATE_HEADLESS_SERVICE: Final = "Failed to create headless service for error: %v"
MSG_FAILED_UPDATE_LEADER_STS: Final = "Failed to update leader statefulset %s: %v"
MSG_FAILED_UPDATE_LEADER_DEPLOYMENT: Final = "Failed to update leader deployment %s: %v"
MSG_CREATED_LEADER_STS: Final = "Created leader statefulset %s"
MSG_CREATED_LEADER_DEPLOYMENT: Final = "Created leader deployment %s"
MSG_DELETING_SURGE_REPLICA: Final = "deleting surge replica %s-%d"
MSG_DELETING_SURGE_REPLICAS: Final = "deleting surge replicas from %s-%d to %s-%d"
MSG_UPDATING_REPLICA: Final = "Updating replica %d"
MSG_UPDATING_REPLICAS: Final = "Updating replicas %d to %d (inclusive)"
MSG_RECREATE_GROUP: Final = "Worker pod %s failed, deleted leader pod %s to recreate group %s"
MSG_FAILED_CREATE_WORKER_STS: Final = "Failed to create worker statefulset for leader pod %s: %v"
MSG_LEADER_NAME_ANNOTATION_MISTAKE: Final = (
    "leader pod %s/%s contains mistake annotation 'leaderworkerset.sigs.k8s.io/leader-name': "
    "requires Kubernetes ≥v1.27 or v1.26 with StatefulSetStartOrdinal feature"
)
MSG_CREATED_WORKER_STS: Final = "Created worker statefulset for leader pod %s"
MSG_RESTART_BUDGET_EXHAUSTED: Final = (
    "Restart budget exhausted; terminated group %s and stopped automatic recovery"
)
MSG_GROUP_REPLACEMENT_DEFERRED: Final = (
    "Leader pod %s waits for %d terminating group(s) to be removed before scheduling"
)
MSG_GROUP_REPLACEMENT_ADMITTED: Final = "Leader pod %s admitted for scheduling"

# DisaggregatedSet controller reasons and messages.
EVENT_ROLLING_UPDATE_STARTED: Final = "RollingUpdateStarted"
EVENT_ROLLING_UPDATE_COMPLETED: Final = "RollingUpdateCompleted"
EVENT_SCALING_UP: Final = "ScalingUp"
EVENT_SCALING_DOWN: Final = "ScalingDown"
EVENT_LWS_DELETED: Final = "LWSDeleted"
EVENT_SCALER_CREATED: Final = "ScalerCreated"
EVENT_SCALER_DELETED: Final = "ScalerDeleted"
EVENT_SCALER_CONFLICT: Final = "ScalerConflict"
EVENT_REVISION_DRAIN_BLOCKED: Final = "RevisionDrainBlocked"
EVENT_INITIAL_REPLICAS_MISSING: Final = "InitialReplicasMissing"

MSG_ROLLING_UPDATE_STARTED: Final = "Started rolling update to revision %s"
MSG_ROLLING_UPDATE_COMPLETED: Final = "Completed rolling update to revision %s"
MSG_SCALING_UP: Final = "Scaling up %s LWS %s from %d to %d replicas"
MSG_SCALING_DOWN: Final = "Scaling down %s LWS %s from %d to %d replicas"
MSG_LWS_DELETED_DRAINED: Final = "Deleted drained LWS %s"
MSG_LWS_DELETED_REMOVED_SLICE: Final = "Deleted LWS %s for removed slice %d"
MSG_SCALER_CREATED: Final = "Created scaler %s for role %s"
MSG_SCALER_DELETED: Final = "Deleted scaler %s (role %s is no longer External)"
MSG_SCALER_CONFLICT: Final = "Scaler %s exists but is not controlled by this DisaggregatedSet; not adopting"
MSG_INITIAL_REPLICAS_MISSING: Final = (
    "LWS %s has no valid %s annotation; restoring it from current spec.replicas (%d)"
)
# Errors (reconcile fails and retries) when a child's name is taken by an object we do not control.
MSG_LWS_NOT_CONTROLLED_ADOPT: Final = (
    "LeaderWorkerSet %s exists but is not controlled by DisaggregatedSet %s; refusing to adopt it"
)
MSG_LWS_NOT_CONTROLLED_SCALE: Final = (
    "LeaderWorkerSet %s exists but is not controlled by DisaggregatedSet %s; refusing to scale it"
)
MSG_SERVICE_NOT_CONTROLLED: Final = (
    "Service %s exists but is not controlled by LeaderWorkerSet %s; refusing to adopt it"
)
MSG_REVISION_DRAIN_BLOCKED: Final = (
    "Waiting to retire revision %s: no safe partial drain or replacement growth is currently available"
)

# --------------------------------------------------------------------------------------------------
# Feature gates
# --------------------------------------------------------------------------------------------------

FEATURE_WORKLOAD_AWARE_SCHEDULING: Final = "WorkloadAwareScheduling"
# Known gates and their defaults; unknown names are rejected at startup.
FEATURE_GATE_DEFAULTS: Final[dict[str, bool]] = {FEATURE_WORKLOAD_AWARE_SCHEDULING: False}

# Gang-scheduling providers (config gangSchedulingManagement.schedulerProvider).
SCHEDULER_PROVIDER_VOLCANO: Final = "volcano"
SCHEDULER_PROVIDER_KUBERNETES: Final = "kubernetes"
SCHEDULER_PROVIDERS: Final = (SCHEDULER_PROVIDER_VOLCANO, SCHEDULER_PROVIDER_KUBERNETES)

# --------------------------------------------------------------------------------------------------
# Webhooks
# --------------------------------------------------------------------------------------------------

WEBHOOK_PATH_MUTATE_LWS: Final = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
WEBHOOK_PATH_VALIDATE_LWS: Final = "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
WEBHOOK_PATH_MUTATE_POD: Final = "/mutate--v1-pod"
WEBHOOK_PATH_VALIDATE_POD: Final = "/validate--v1-pod"
WEBHOOK_PATH_VALIDATE_DS: Final = "/validate-disaggregatedset-x-k8s-io-v1-disaggregatedset"

WEBHOOK_NAME_MUTATE_LWS: Final = "mleaderworkerset.kb.io"
WEBHOOK_NAME_VALIDATE_LWS: Final = "vleaderworkerset.kb.io"
WEBHOOK_NAME_MUTATE_POD: Final = "mpod.kb.io"
WEBHOOK_NAME_VALIDATE_POD: Final = "vpod.kb.io"
WEBHOOK_NAME_VALIDATE_DS: Final = "vdisaggregatedset.kb.io"

MUTATING_WEBHOOK_CONFIGURATION_NAME: Final = "lws-mutating-webhook-configuration"
VALIDATING_WEBHOOK_CONFIGURATION_NAME: Final = "lws-validating-webhook-configuration"

# --------------------------------------------------------------------------------------------------
# Default names and operational defaults
# --------------------------------------------------------------------------------------------------

DEFAULT_NAMESPACE: Final = "lws-system"
SERVICE_ACCOUNT_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

DEFAULT_WEBHOOK_SERVICE_NAME: Final = "lws-webhook-service"
DEFAULT_WEBHOOK_SECRET_NAME: Final = "lws-webhook-server-cert"
DEFAULT_WEBHOOK_PORT: Final = 9443
DEFAULT_WEBHOOK_CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
CERT_CA_NAME: Final = "lws-ca"
CERT_CA_ORGANIZATION: Final = "lws"
TLS_CERT_FILE: Final = "tls.crt"
TLS_KEY_FILE: Final = "tls.key"

DEFAULT_LEADER_ELECTION_ID: Final = "b8b2488c.x-k8s.io"
DEFAULT_LEADER_ELECTION_RESOURCE_LOCK: Final = "leases"
DEFAULT_METRICS_BIND_ADDRESS: Final = ":8443"
DEFAULT_HEALTH_PROBE_BIND_ADDRESS: Final = ":8081"
DEFAULT_READINESS_ENDPOINT: Final = "/readyz"
DEFAULT_LIVENESS_ENDPOINT: Final = "/healthz"
DEFAULT_CLIENT_QPS: Final = 500.0
DEFAULT_CLIENT_BURST: Final = 500

# Server-side apply field manager used for every object we apply.
FIELD_MANAGER: Final = "lws"
